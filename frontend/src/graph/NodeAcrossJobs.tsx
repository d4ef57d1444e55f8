// The clicked node's numbers in every fidelity job of this model (newest first): where it was matched and its
// accumulated / local SQNR and clipping rate, so a layer can be followed across runs without switching the
// colour job. Profiles are read as the colour choice reads them (same cache).
import { useQueries } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";
import { keys } from "../api/keys";
import type { Job, LayerProfile } from "../api/types";
import { formatTime } from "../lib/format";
import { nameIndex, profileNodeId } from "./metrics";
import { jobSide } from "./queries";
import type { GraphNode } from "./types";

/** At most this many jobs' profiles are read for one node (each is a request of the whole profile). */
export const ACROSS_JOBS_MAX = 8;

export interface AcrossRow {
  job: Job;
  side: "golden" | "compressed";
  matchedTo: string | null;
  accumulated: number | null;
  local: number | null;
  clip: number | null;
}

/** The node's row in each loaded profile (jobs where the layer was not profiled are left out). */
export function acrossJobsRows(
  node: GraphNode,
  nodes: GraphNode[],
  modelId: string,
  profiles: { job: Job; profile: LayerProfile | undefined }[],
): AcrossRow[] {
  const index = nameIndex(nodes);
  const rows: AcrossRow[] = [];
  for (const { job, profile } of profiles) {
    const side = jobSide(job, modelId);
    if (!profile || (side !== "golden" && side !== "compressed")) continue;
    const layer = (profile.layers ?? []).find((l) => profileNodeId(index, l, side) === node.id);
    if (!layer) continue;
    rows.push({
      job,
      side,
      matchedTo: side === "golden" ? layer.compressed_name : layer.name,
      accumulated: layer.accumulated.sqnr_db ?? null,
      local: layer.local?.sqnr_db ?? null,
      clip: layer.shift?.clip_rate ?? null,
    });
  }
  return rows;
}

const db = (v: number | null) => (v === null ? "—" : `${v.toFixed(1)} dB`);

export function NodeAcrossJobs({
  node,
  nodes,
  modelId,
  jobs,
}: {
  node: GraphNode;
  nodes: GraphNode[];
  modelId: string;
  jobs: Job[];
}) {
  const fidelity = jobs
    .filter((j) => j.kind === "fidelity")
    .sort((a, b) => b.created_at.localeCompare(a.created_at))
    .slice(0, ACROSS_JOBS_MAX);
  const profiles = useQueries({
    queries: fidelity.map((job) => ({
      queryKey: keys.layers(job.id),
      queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/fidelity/layers", { params: { path: { job_id: job.id } } })),
      staleTime: Infinity,
      retry: false,
    })),
  });
  if (fidelity.length === 0) return null;
  const rows = acrossJobsRows(
    node,
    nodes,
    modelId,
    fidelity.map((job, i) => ({ job, profile: profiles[i]?.data })),
  );
  const loading = profiles.some((p) => p.isPending);
  return (
    <div className="graph-across" data-testid="node-across-jobs">
      <table className="compact" aria-label="This layer in each fidelity job">
        <caption>
          In fidelity jobs{loading ? " (loading…)" : ""}
          {rows.length === 0 && !loading ? ": not profiled in any" : ""}
        </caption>
        {rows.length > 0 && (
          <>
            <thead>
              <tr>
                <th>Job</th>
                <th>Matched to</th>
                <th className="num">Acc. SQNR</th>
                <th className="num">Local SQNR</th>
                <th className="num">Clipping</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.job.id}>
                  <td title={r.job.id}>
                    {r.job.name || formatTime(r.job.created_at)} ({r.side})
                  </td>
                  <td>
                    <code>{r.matchedTo ?? "—"}</code>
                  </td>
                  <td className="num">{db(r.accumulated)}</td>
                  <td className="num">{db(r.local)}</td>
                  <td className="num">{r.clip === null ? "—" : `${(100 * r.clip).toFixed(2)} %`}</td>
                </tr>
              ))}
            </tbody>
          </>
        )}
      </table>
    </div>
  );
}
