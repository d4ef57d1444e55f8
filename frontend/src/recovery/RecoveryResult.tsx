// A recovery job's result: the lineage line, the before/after table per method step, the loss curve of the
// training steps (distill, qat), before/after per sample and per layer (BeforeAfter.tsx), and the links to the recovered model (its page and its ONNX file).
import { ErrorMessage, Loading } from "../components/QueryView";
import { href } from "../lib/route";
import { useRecoverySummary, recoveredModelHref } from "./queries";
import { BeforeAfter } from "./BeforeAfter";
import { LossCurveChart } from "./LossCurveChart";
import { fidelityFacts } from "../lib/pointFidelity";
import { lineageLine, stepRows, taskRows, type RecoverySummary } from "./recovery";
import { lossCurves } from "./training";

export function StepsTable({ summary }: { summary: RecoverySummary }) {
  return (
    <table className="table compact" aria-label="Before and after recovery (held-out split)">
      <thead>
        <tr>
          <th>Step</th>
          <th className="num">KL mean</th>
          <th className="num">vs before</th>
          <th className="num">Top-1 agreement</th>
          <th className="num">Accuracy</th>
          <th className="num">Time</th>
        </tr>
      </thead>
      <tbody>
        {stepRows(summary).map((row) => (
          <tr key={row.method}>
            <td>{row.method}</td>
            <td className="num">{row.kl}</td>
            <td className="num">{row.klRatio}</td>
            <td className="num">{row.top1}</td>
            <td className="num">{row.accuracy}</td>
            <td className="num">{row.seconds}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Every fidelity metric of the compressed model before recovery and after, side by side. */
export function MetricsBeforeAfter({ summary }: { summary: RecoverySummary }) {
  const before = fidelityFacts(summary.before);
  const after = new Map(fidelityFacts(summary.after));
  return (
    <details className="more-settings">
      <summary>Every metric, before and after (held-out split)</summary>
      <table className="table compact facts-table" aria-label="Every metric, before and after recovery">
        <thead>
          <tr>
            <th>Metric</th>
            <th className="num">Before recovery</th>
            <th className="num">After</th>
          </tr>
        </thead>
        <tbody>
          {before.map(([label, value]) => (
            <tr key={label}>
              <th scope="row">{label}</th>
              <td className="num">{value}</td>
              <td className="num">{after.get(label) ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

const VERDICT = { better: "better", worse: "worse", same: "unchanged" } as const;

/** The task's metrics (params.task) on the held-out split: the compressed export before recovery and the
 * recovered one, each against the golden model and the dataset's annotations. */
export function TaskBeforeAfter({ summary }: { summary: RecoverySummary }) {
  const rows = taskRows(summary);
  if (!summary.task || rows.length === 0) return null;
  return (
    <section className="panel" aria-labelledby="recovery-task-heading">
      <h3 id="recovery-task-heading">Task ({summary.task.task}) before and after recovery</h3>
      <p className="muted small-text">
        Both exports in onnxruntime on the held-out split, against the golden model (…_vs_golden) and the dataset&apos;s
        annotations (drops and deltas).
      </p>
      <table className="table compact" aria-label="Task metrics before and after recovery">
        <thead>
          <tr>
            <th>Metric</th>
            <th className="num">Before recovery</th>
            <th className="num">After</th>
            <th>Recovery</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.metric}>
              <th scope="row">
                <code>{r.metric}</code>
              </th>
              <td className="num">{r.before}</td>
              <td className="num">{r.after}</td>
              <td className={r.verdict === "worse" ? "flip" : undefined}>{r.verdict ? VERDICT[r.verdict] : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

export function RecoveryResult({ jobId, showModelLink }: { jobId: string; showModelLink: boolean }) {
  const summary = useRecoverySummary(jobId, true);
  if (summary.isPending) return <Loading what="the recovery result" />;
  if (summary.isError) return <ErrorMessage error={summary.error} />;
  const s = summary.data;
  const curves = lossCurves(s);
  return (
    <div className="recovery-result">
      <p className="lineage" aria-label="Lineage">
        {lineageLine(s.lineage).map((part, i) => (
          <span key={part}>
            {i > 0 && " → "}
            {i === 0 ? (
              <a href={href({ page: "model", modelId: s.lineage.parent_model_id })}>{part}</a>
            ) : (
              <code>{part}</code>
            )}
          </span>
        ))}
      </p>
      <StepsTable summary={s} />
      <TaskBeforeAfter summary={s} />
      <MetricsBeforeAfter summary={s} />
      {curves.length > 0 && <LossCurveChart curves={curves} />}
      <BeforeAfter jobId={jobId} summary={s} />
      <p className="muted">
        {s.n_heldout} held-out and {s.n_calibration} calibration samples. Exported as <code>{s.export.kind}</code>
        {s.export.measured ? `, KL ${s.export.measured.kl_mean?.toPrecision(4) ?? "—"} in onnxruntime` : ""}.{" "}
        {showModelLink && <a href={href({ page: "model", modelId: s.model_id })}>The recovered model</a>}{" "}
        <a href={recoveredModelHref(jobId)} download>
          Download ONNX
        </a>
      </p>
    </div>
  );
}
