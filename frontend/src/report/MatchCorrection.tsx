// The report's layer matching and its correction: every golden layer with the compressed layer it was paired
// with (method, confidence) and the unmatched remainder; the user re-pairs, unmatches or pairs layers, and
// re-runs the job with the corrected `layer_name_map` (a new fidelity job with the same parameters plus the
// map: the relaunch route takes no parameter changes). The rules live in matchCorrection.ts.
import { useMemo, useState } from "react";
import { useLayerProfile } from "../api/fidelity";
import { useCreateJob, useJob } from "../api/jobs";
import type { Job, LayerProfile } from "../api/types";
import { ErrorMessage } from "../components/QueryView";
import { formatPercent } from "../lib/format";
import { DEFAULT_SAMPLE_QUERY, href } from "../lib/route";
import { isOffline } from "../offline/mode";
import { SideBySideGraphs } from "../graph/SideBySideGraphs";
import {
  applyEdits,
  buildNameMap,
  compressedChoices,
  effectiveEdits,
  filterRows,
  nameMapOf,
  needsReview,
  profileRows,
  unusedCompressed,
  validateEdits,
  type MatchRow,
  type RowFilter,
} from "./matchCorrection";

/** Rows drawn at once; a filter narrows larger profiles (MiniLM has a few hundred layers). */
const MAX_ROWS = 200;
const UNMATCHED_OPTION = "\u0000unmatched";

export function MatchCorrection({ jobId }: { jobId: string }) {
  const job = useJob(jobId);
  const profile = useLayerProfile(jobId, true);
  if (isOffline() || !job.data || job.data.kind !== "fidelity" || !profile.data) return null;
  return <Correction job={job.data} profile={profile.data} />;
}

function methodText(row: MatchRow): string {
  if (row.compressed === null) return "not matched";
  if (row.method === "edited") return "your correction";
  const method = row.method === "name_map" ? "name map" : (row.method ?? "?");
  return row.method === "structure" || row.method === "weights"
    ? `${method}, ${formatPercent(row.confidence, 0)}`
    : method;
}

function Correction({ job, profile }: { job: Job; profile: LayerProfile }) {
  const rows = useMemo(() => profileRows(profile), [profile]);
  const choices = useMemo(() => compressedChoices(profile), [profile]);
  const [edits, setEdits] = useState<Map<string, string | null>>(() => new Map());
  const [editing, setEditing] = useState<string | null>(null);
  const [filter, setFilter] = useState<RowFilter>("all");
  const [query, setQuery] = useState("");
  const [showGraphs, setShowGraphs] = useState(false);
  const create = useCreateJob(job.project_id);

  const after = useMemo(() => applyEdits(rows, edits), [rows, edits]);
  const changed = useMemo(() => effectiveEdits(rows, edits), [rows, edits]);
  const errors = useMemo(() => validateEdits(rows, choices, edits), [rows, choices, edits]);
  const free = useMemo(() => unusedCompressed(after, choices), [after, choices]);
  const shown = useMemo(
    () => filterRows(after, new Set(changed.keys()), filter, query),
    [after, changed, filter, query],
  );
  const nameMap = useMemo(() => buildNameMap(nameMapOf(job.params), rows, edits), [job.params, rows, edits]);
  const review = rows.filter((r) => needsReview(r)).length;
  const counts = new Map<string, number>();
  for (const row of rows) if (row.method) counts.set(row.method, (counts.get(row.method) ?? 0) + 1);

  // The layers pairing by clicking in the graphs can pair (stable, so the graphs' node lookups are kept).
  const pairableGolden = useMemo(() => rows.map((r) => ({ key: r.golden, names: r.goldenIds })), [rows]);
  const edit = (golden: string, compressed: string | null) => {
    setEdits(new Map(edits).set(golden, compressed));
    setEditing(null);
    create.reset();
  };
  const undo = (golden: string) => {
    const next = new Map(edits);
    next.delete(golden);
    setEdits(next);
    create.reset();
  };

  return (
    <section className="panel match-correction" aria-labelledby="match-correction-heading">
      <h3 id="match-correction-heading">Layer matching</h3>
      <p className="muted small-text" data-testid="match-summary">
        {rows.length - (profile.unmatched_golden ?? []).length} golden layers matched (
        {[...counts].map(([method, n]) => `${n.toString()} by ${method.replace("_", " ")}`).join(", ")});{" "}
        {(profile.unmatched_golden ?? []).length} golden and {(profile.unmatched_compressed ?? []).length} compressed
        layers unmatched; {review} to review (unmatched, or matched by structure with confidence under 80 %). Wrong
        pairs: change them here and re-run the job with the corrected name map.
      </p>
      <div className="match-tools">
        <label>
          Show{" "}
          <select
            value={filter}
            aria-label="Which layers"
            onChange={(e) => {
              setFilter(e.target.value as RowFilter);
            }}
          >
            <option value="all">all layers</option>
            <option value="review">layers to review</option>
            <option value="edited">your corrections</option>
          </select>
        </label>{" "}
        <label>
          Find{" "}
          <input
            type="search"
            value={query}
            placeholder="layer name or alias"
            aria-label="Find a layer to correct"
            onChange={(e) => {
              setQuery(e.target.value);
            }}
          />
        </label>
      </div>
      <div className="scroll scroll-y">
        <table className="table compact match-table" aria-labelledby="match-correction-heading">
          <thead>
            <tr>
              <th>Golden layer</th>
              <th>Op</th>
              <th>Compressed layer</th>
              <th>Matched by</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {shown.slice(0, MAX_ROWS).map((row) => (
              <tr key={row.golden} data-golden={row.golden} className={changed.has(row.golden) ? "edited" : undefined}>
                <td title={row.goldenIds.join(", ")}>
                  <code>{row.label}</code>
                  {row.label !== row.golden && <div className="muted small-text">{row.golden}</div>}
                </td>
                <td>{row.opType}</td>
                <td>
                  {editing === row.golden ? (
                    <select
                      autoFocus
                      aria-label={`Compressed layer for ${row.label}`}
                      value={row.compressed ?? UNMATCHED_OPTION}
                      onChange={(e) => {
                        edit(row.golden, e.target.value === UNMATCHED_OPTION ? null : e.target.value);
                      }}
                      onBlur={() => {
                        setEditing(null);
                      }}
                    >
                      <option value={UNMATCHED_OPTION}>— not matched —</option>
                      {choices.map((c) => (
                        <option key={c} value={c}>
                          {c}
                          {free.includes(c) ? " (free)" : ""}
                        </option>
                      ))}
                    </select>
                  ) : row.compressed === null ? (
                    <span className="badge badge-bad">not matched</span>
                  ) : (
                    <code>{row.compressed}</code>
                  )}
                </td>
                <td className={needsReview(row) && row.method !== "edited" ? "flip" : undefined}>{methodText(row)}</td>
                <td className="row-actions">
                  <button
                    type="button"
                    className="small"
                    onClick={() => {
                      setEditing(row.golden);
                    }}
                  >
                    {row.compressed === null ? "Pair" : "Change"}
                  </button>
                  {row.compressed !== null && (
                    <button
                      type="button"
                      className="small"
                      onClick={() => {
                        edit(row.golden, null);
                      }}
                    >
                      Unmatch
                    </button>
                  )}
                  {changed.has(row.golden) && (
                    <button
                      type="button"
                      className="small"
                      onClick={() => {
                        undo(row.golden);
                      }}
                    >
                      Undo
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {shown.length > MAX_ROWS && (
        <p className="muted small-text">
          Showing {MAX_ROWS} of {shown.length} layers: find a layer by name to see the others.
        </p>
      )}
      <p className="muted small-text" data-testid="match-free">
        Compressed layers no golden layer uses ({free.length}):{" "}
        {free.length === 0 ? "none" : free.slice(0, 40).map((c) => <code key={c}>{c} </code>)}
        {free.length > 40 ? `… and ${(free.length - 40).toString()} more` : ""}
      </p>
      <div className="match-launch">
        {changed.size > 0 && errors.length > 0 && (
          <ul className="error" role="alert" aria-label="Why the correction cannot run yet">
            {errors.map((e) => (
              <li key={e}>{e}</li>
            ))}
          </ul>
        )}
        {changed.size > 0 && (
          <details>
            <summary>The name map the re-run gets ({Object.keys(nameMap).length} entries)</summary>
            <pre data-testid="match-name-map">{JSON.stringify(nameMap, null, 2)}</pre>
            <p className="muted small-text">
              An empty value leaves that golden layer unmatched. Layers the map does not name are matched automatically,
              as before.
            </p>
          </details>
        )}
        <button
          type="button"
          disabled={errors.length > 0 || create.isPending}
          onClick={() => {
            create.mutate({ kind: "fidelity", params: { ...job.params, layer_name_map: nameMap } });
          }}
        >
          Re-run with this matching ({changed.size} {changed.size === 1 ? "change" : "changes"})
        </button>
        {create.isError && <ErrorMessage error={create.error} />}
        {create.isSuccess && (
          <p role="status" data-testid="match-relaunched" data-job-id={create.data.id}>
            Launched fidelity job {create.data.id.slice(0, 8)} with the corrected matching:{" "}
            <a href={href({ page: "report", jobId: create.data.id, query: DEFAULT_SAMPLE_QUERY })}>its report</a> (ready
            when the job has run).
          </p>
        )}
      </div>
      <details
        onToggle={(e) => {
          setShowGraphs(e.currentTarget.open);
        }}
      >
        <summary>Both graphs side by side, with this matching</summary>
        {showGraphs && (
          <SideBySideGraphs
            goldenModelId={String(job.params["golden_model_id"])}
            compressedModelId={String(job.params["compressed_model_id"])}
            pairings={after}
            unmatchedGolden={after.filter((r) => r.compressed === null).map((r) => r.golden)}
            unmatchedCompressed={free}
            pairing={{ goldenLayers: pairableGolden, compressedLayers: choices, onPair: edit }}
          />
        )}
      </details>
    </section>
  );
}
