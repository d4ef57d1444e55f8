// The sample inspector: one sample's input (a picture, or its arrays' statistics) beside the golden and the
// compressed model's top-k class probabilities, with the label when the dataset has one.
import { formatNumber, formatPercent } from "../lib/format";
import { ErrorMessage, Loading } from "../components/QueryView";
import { type OutputTopK, type SampleInspection, useSampleInspection } from "./inspectorQueries";
import "./inspector.css";
import { useRevealOnOpen } from "../components/reveal";
import { TaskSampleView } from "./TaskSampleView";

type InputArray = SampleInspection["input"][number];

function InputView({ inspection }: { inspection: SampleInspection }) {
  if (inspection.input_error) return <p className="muted">Input not shown: {inspection.input_error}</p>;
  return (
    <div className="inspector-input">
      {inspection.input.map((a: InputArray) => (
        <figure key={a.name}>
          {a.thumbnail ? (
            <img
              src={a.thumbnail}
              alt={`Input “${a.name}” of sample ${inspection.index.toString()}`}
              width={256}
              height={256}
            />
          ) : null}
          <figcaption>
            <code>{a.name}</code> [{a.shape.join(" × ")}] {a.dtype}
            <br />
            min {formatNumber(a.min)}, max {formatNumber(a.max)}, mean {formatNumber(a.mean)}
            {a.std !== null ? `, std ${formatNumber(a.std)}` : ""}
            {a.nonfinite > 0 ? `, ${a.nonfinite.toString()} non-finite` : ""}
          </figcaption>
        </figure>
      ))}
      {inspection.input_name && <p className="small-text">{inspection.input_name}</p>}
    </div>
  );
}

interface Row {
  cls: number;
  golden: number | null;
  compressed: number | null;
}

/** The classes in either model's top-k, most probable under the golden model first. */
export function probabilityRows(output: OutputTopK): Row[] {
  const byClass = new Map<number, Row>();
  for (const role of ["golden", "compressed"] as const) {
    const top = output[role];
    if (!top) continue;
    top.classes.forEach((cls, i) => {
      const row = byClass.get(cls) ?? { cls, golden: null, compressed: null };
      row[role] = top.probabilities[i] ?? null;
      byClass.set(cls, row);
    });
  }
  return [...byClass.values()].sort(
    (a, b) => (b.golden ?? -1) - (a.golden ?? -1) || (b.compressed ?? -1) - (a.compressed ?? -1),
  );
}

function Bar({ role, p }: { role: "golden" | "compressed"; p: number | null }) {
  if (p === null) return <span className="muted prob-text">not in top-k</span>;
  return (
    <>
      <div className={`prob-bar ${role}`} style={{ width: `${(p * 100).toFixed(1)}%` }} />
      <span className="prob-text">{formatPercent(p, 2)}</span>
    </>
  );
}

function Probabilities({ output, label, k }: { output: OutputTopK; label: number | null; k: number }) {
  const rows = probabilityRows(output);
  const top1 = (role: "golden" | "compressed") => output[role]?.classes[0] ?? null;
  return (
    <table
      className="table compact inspector-probs"
      aria-label={`Top-${k.toString()} probabilities of ${output.output}`}
    >
      <caption>
        Top-{k} classes of <code>{output.output}</code>
        {output.golden === null && " (golden output not finite)"}
        {output.compressed === null && " (compressed output not finite)"}
      </caption>
      <thead>
        <tr>
          <th style={{ width: "5.5rem" }}>Class</th>
          <th>Golden</th>
          <th>Compressed</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.cls} data-class={r.cls}>
            <td className="class-cell">
              {r.cls}
              {r.cls === label && <span className="badge">label</span>}
              {r.cls === top1("golden") && r.cls !== top1("compressed") && (
                <span className="badge badge-bad">flip</span>
              )}
            </td>
            <td className="bar-cell">
              <Bar role="golden" p={r.golden} />
            </td>
            <td className="bar-cell">
              <Bar role="compressed" p={r.compressed} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function SampleInspector({
  jobId,
  index,
  onClose,
  taskSamples = false,
}: {
  jobId: string;
  index: number;
  onClose: () => void;
  /** Show the task's predictions of the sample (the job kept them). */
  taskSamples?: boolean;
}) {
  const inspection = useSampleInspection(jobId, index);
  const panel = useRevealOnOpen<HTMLElement>(index);
  const data = inspection.data;
  return (
    <section ref={panel} className="inspector" aria-labelledby="inspector-heading" data-testid="sample-inspector">
      <div className="chart-head">
        <h3 id="inspector-heading">Sample #{index}</h3>
        <button type="button" className="small" onClick={onClose} aria-label="Close the sample inspector">
          Close
        </button>
      </div>
      {inspection.isPending && <Loading what="the sample" />}
      {inspection.isError && <ErrorMessage error={inspection.error} />}
      {taskSamples && <TaskSampleView jobId={jobId} index={index} />}
      {data && (
        <>
          <p>
            {data.label !== null ? (
              <>
                Label <strong>{data.label}</strong>.{" "}
              </>
            ) : (
              "No label. "
            )}
            {data.metrics && (
              <>
                KL {formatNumber(data.metrics.kl)} nats, golden class {data.metrics.golden_class ?? "—"}, compressed
                class {data.metrics.compressed_class ?? "—"}
                {data.metrics.flagged ? " (flagged)" : ""}.
              </>
            )}
          </p>
          <div className="inspector-body">
            <InputView inspection={data} />
            <div>
              {data.outputs.map((o) => (
                <Probabilities key={o.output} output={o} label={data.label} k={data.k} />
              ))}
            </div>
          </div>
        </>
      )}
    </section>
  );
}
