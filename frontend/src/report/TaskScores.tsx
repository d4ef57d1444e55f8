// The classification task's scores (issue 30): precision, recall and F1 against the labels and against the
// golden model, and how often the two models agree on the golden model's borderline samples.
import { formatNumber, formatPercent } from "../lib/format";
import type { OutputClasses } from "./diagnostics";
import { taskScoreRows } from "./taskScores";

function score(value: number | null): string {
  return value === null ? "—" : formatNumber(value, 3);
}

export function TaskScores({ output }: { output: OutputClasses }) {
  const task = output.task;
  if (!task) return null;
  const rows = taskScoreRows(task);
  const delta = task.against_labels?.delta;
  const border = task.borderline;
  return (
    <div className="panel" aria-labelledby="task-scores-heading">
      <h3 id="task-scores-heading">Task scores</h3>
      <table className="compact" aria-label="Classification task scores">
        <thead>
          <tr>
            <th>Scored</th>
            <th>Accuracy</th>
            <th>Precision (macro)</th>
            <th>Recall (macro)</th>
            <th>F1 (macro)</th>
            <th>F1 (weighted)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.label}>
              <th scope="row">{r.label}</th>
              <td>{score(r.accuracy)}</td>
              <td>{score(r.precisionMacro)}</td>
              <td>{score(r.recallMacro)}</td>
              <td>{score(r.f1Macro)}</td>
              <td>{score(r.f1Weighted)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted">
        {delta?.f1_macro != null && <>Macro F1 change against the labels: {formatNumber(delta.f1_macro, 3)}. </>}
        {border.top1_agreement != null && (
          <>
            On the golden model&apos;s {border.n} most borderline samples (top-1 margin ≤{" "}
            {formatNumber(border.margin_max ?? 0, 3)}) the models agree on {formatPercent(border.top1_agreement, 1)}
            {border.top1_agreement_rest != null && (
              <>, against {formatPercent(border.top1_agreement_rest, 1)} elsewhere</>
            )}
            .
          </>
        )}
      </p>
    </div>
  );
}
