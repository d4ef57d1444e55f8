// The recoveries launched from the points of the sweeps on a chart: the succeeded recovery jobs (newest 100)
// whose sweep_point_id belongs to one of those sweeps, and their summaries (shared with the recovery panel).
// Frontend only: the job list (GET /jobs?kind=recovery) carries each job's sweep_point_id, GET
// /jobs/{id}/recovery the before/after; no new route.
import { useQueries, useQuery, type UseQueryResult } from "@tanstack/react-query";
import { api, unwrap } from "../api/http";
import { isOffline } from "../offline/mode";
import type { RecoverySummary } from "./recovery";

const sweepOf = (params: unknown): string | null => {
  const point = (params as { sweep_point_id?: unknown } | null)?.sweep_point_id;
  return typeof point === "string" ? (point.split(":")[0] ?? null) : null;
};

export interface Recovery {
  jobId: string;
  summary: RecoverySummary;
}

// Module-level, so one reference: TanStack Query then re-runs it only when a result changes (stable output).
const loaded = (results: UseQueryResult<RecoverySummary>[]): Recovery[] =>
  results.flatMap((r) => (r.data ? [{ jobId: r.data.job_id, summary: r.data }] : []));

export function useSweepRecoveries(sweepJobIds: readonly string[]): Recovery[] {
  const jobs = useQuery({
    queryKey: ["recovery-jobs", "succeeded"] as const,
    queryFn: () =>
      unwrap(api.GET("/api/v1/jobs", { params: { query: { kind: "recovery", status: "succeeded", limit: 100 } } })),
    // an exported report holds no job list: no request it could only answer with 404
    enabled: sweepJobIds.length > 0 && !isOffline(),
    // a recovery finishes while its sweep's chart is open elsewhere: ask again on mount
    staleTime: 0,
    refetchOnMount: "always",
  });
  const sweeps = new Set(sweepJobIds);
  const ids = (jobs.data?.items ?? []).filter((j) => sweeps.has(sweepOf(j.params) ?? "")).map((j) => j.id);
  return useQueries({
    queries: ids.map((jobId) => ({
      queryKey: ["recovery", jobId] as const,
      queryFn: () => unwrap(api.GET("/api/v1/jobs/{job_id}/recovery", { params: { path: { job_id: jobId } } })),
      staleTime: Infinity,
    })),
    combine: loaded,
  });
}
