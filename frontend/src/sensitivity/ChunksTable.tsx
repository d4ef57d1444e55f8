// The chunks a fanned-out job was split into: which layers (a sensitivity scan) or which point (a sweep), which
// worker took each, how often it was tried, and why it failed. Polled while the job runs.
import { useJobChunks } from "../api/jobs";
import { POLL_MS, isActive } from "../api/polling";
import type { Job, JobChunk } from "../api/types";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { StatusBadge } from "../components/Status";
import { formatDuration, formatTime } from "../lib/format";
import { stringAt, stringsAt } from "../lib/json";

const SHOWN_LAYERS = 4;

function seconds(chunk: JobChunk): number | null {
  if (!chunk.started_at) return null;
  const end = chunk.finished_at ? Date.parse(chunk.finished_at) : Date.now();
  const start = Date.parse(chunk.started_at);
  return Number.isFinite(end - start) ? Math.max(0, (end - start) / 1000) : null;
}

function Layers({ chunk }: { chunk: JobChunk }) {
  const label = stringAt(chunk.spec, "label");
  if (label !== null) return <code>{label}</code>;
  const layers = stringsAt(chunk.spec, "layers");
  if (layers.length === 0) return <span className="muted">—</span>;
  const rest = layers.length - SHOWN_LAYERS;
  return (
    <span title={layers.join(", ")}>
      <span className="muted">{layers.length}: </span>
      {layers.slice(0, SHOWN_LAYERS).map((l, i) => (
        <span key={l}>
          {i > 0 && ", "}
          <code>{l}</code>
        </span>
      ))}
      {rest > 0 && <span className="muted"> and {rest} more</span>}
    </span>
  );
}

export function ChunksTable({ job }: { job: Job }) {
  const chunks = useJobChunks(job);
  const active = isActive(job);
  const done = chunks.data?.filter((c) => c.status === "succeeded").length ?? 0;
  const total = job.chunks_total ?? chunks.data?.length ?? 0;
  return (
    <section className="panel" aria-labelledby="chunks-heading">
      <h3 id="chunks-heading">
        Chunks{" "}
        {total > 0 && (
          <span className="muted small-text">
            ({done} of {total} done{active ? `, updating every ${(POLL_MS / 1000).toString()} s` : ""})
          </span>
        )}
      </h3>
      {chunks.isPending ? (
        <Loading what="the chunks" />
      ) : chunks.isError ? (
        <ErrorMessage error={chunks.error} />
      ) : chunks.data.length === 0 ? (
        <Empty>
          {job.status === "queued"
            ? "The job has not been split into chunks yet."
            : "This job ran in one piece (no chunks)."}
        </Empty>
      ) : (
        <div className="scroll scroll-y">
          <table className="table compact chunks" aria-labelledby="chunks-heading">
            <thead>
              <tr>
                <th className="num">Chunk</th>
                <th>{job.kind === "sweep" ? "Point" : "Layers"}</th>
                <th>Status</th>
                <th>Worker</th>
                <th className="num">Attempts</th>
                <th>Started</th>
                <th className="num">Duration</th>
              </tr>
            </thead>
            <tbody>
              {chunks.data.map((c) => (
                <tr key={c.index} data-chunk={c.index} data-status={c.status}>
                  <td className="num">{c.index}</td>
                  <td>
                    <Layers chunk={c} />
                    {c.error && <div className="error small-text">{c.error}</div>}
                  </td>
                  <td>
                    <StatusBadge status={c.status} />
                  </td>
                  <td>{c.worker_id ? <code>{c.worker_id}</code> : <span className="muted">—</span>}</td>
                  <td className={`num${c.attempts > 1 ? " flip" : ""}`}>{c.attempts}</td>
                  <td>{formatTime(c.started_at)}</td>
                  <td className="num">{formatDuration(seconds(c))}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
