// A sweep's accuracy-aware search (issue 33): the condition, the plan it returned (or how close the best step
// came), every measured step in the order it was measured (k, layers at the high config, size, the metric, holds,
// the reason) with the returned step highlighted; a step's row selects its point on the chart and in the table.
import { useSweepSearch } from "../api/sweeps";
import type { Job } from "../api/types";
import { QueryView } from "../components/QueryView";
import { formatBytes, formatDuration, formatNumber } from "../lib/format";
import { isObject } from "../lib/json";
import { condition } from "../lib/sweepSearch";

export function SearchPanel({ job, onSelect }: { job: Job; onSelect: (id: string) => void }) {
  const launched = isObject(job.params.search);
  const search = useSweepSearch(job.id, launched && job.status === "succeeded");
  if (!launched) return null;
  return (
    <section aria-labelledby="search-heading">
      <h2 id="search-heading">Search: the smallest plan that holds</h2>
      <QueryView query={search} what="the search">
        {(s) => {
          const high = s.high ? "the high config" : "float";
          return (
            <>
              <p>
                {s.met ? (
                  <>
                    Returned <strong>k = {s.k}</strong> of {s.n}: {condition(s.metric, s.direction, s.threshold)} holds
                    at {formatNumber(s.best_value)} with {s.k} of {s.n} rungs at {high}
                  </>
                ) : (
                  <>
                    <strong>Not met</strong>: {condition(s.metric, s.direction, s.threshold)} held on no step; the
                    closest, k = {s.best_k}, measured {formatNumber(s.best_value)}
                  </>
                )}{" "}
                <span className="muted small-text">
                  ({s.steps.length} steps of at most {s.max_steps}, {formatDuration(s.seconds)}
                  {s.monotonic ? "" : "; a measured step contradicted the assumption that the metric improves with k"})
                </span>
              </p>
              <div className="scroll">
                <table className="table compact" aria-labelledby="search-heading">
                  <thead>
                    <tr>
                      <th>Step</th>
                      <th>k</th>
                      <th>Layers at {high}</th>
                      <th>Size</th>
                      <th>{s.metric}</th>
                      <th>Holds</th>
                      <th>Reason</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.steps.map((step, i) => {
                      const returned = step.index === s.returned_index;
                      return (
                        <tr
                          key={step.index}
                          className={`clickable${returned ? " selected" : ""}`}
                          aria-current={returned ? "true" : undefined}
                          onClick={() => {
                            onSelect(`${job.id}:${step.index.toString()}`);
                          }}
                        >
                          <td className="num">{i + 1}</td>
                          <td className="num">
                            {step.k}
                            {returned ? (s.met ? " (returned)" : " (closest)") : ""}
                          </td>
                          <td className="small-text">{step.high_layers.join(", ") || "none"}</td>
                          <td className="num">{formatBytes(step.size_bytes)}</td>
                          <td className="num">{formatNumber(step.value)}</td>
                          <td>{step.holds ? "yes" : "no"}</td>
                          <td className="small-text">{step.reason}</td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
              {s.notes.length > 0 && (
                <ul className="muted small-text">
                  {s.notes.map((note) => (
                    <li key={note}>{note}</li>
                  ))}
                </ul>
              )}
            </>
          );
        }}
      </QueryView>
    </section>
  );
}
