// A point's cause attribution: which of its configuration's techniques causes how much of the divergence. A
// summary sentence, the waterfall (each technique's step applied in order, then the total), the table of each
// technique alone / added in order / removed when left out, the subsets measured and the notes. Nothing for a
// single-technique configuration (the API sends null).
import { useMemo } from "react";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import {
  attributionCsv,
  attributionRows,
  attributionSummary,
  evaluationRows,
  formatMetric,
  waterfallFigure,
  type PointAttribution,
} from "../lib/attribution";
import { slug } from "../lib/csv";
import { formatNumber, formatPercent } from "../lib/format";
import { formatKl } from "../lib/sensitivity";

export function Attribution({
  attribution,
  label,
}: {
  attribution: PointAttribution | null | undefined;
  /** The point's label, for the chart's title and file names. */
  label: string;
}) {
  const figure = useMemo(() => (attribution ? waterfallFigure(attribution) : null), [attribution]);
  if (!attribution || !figure) return null;
  const a = attribution;
  const rows = attributionRows(a);
  const title = `Cause attribution of ${label}`;
  return (
    <section className="attribution" aria-labelledby="attribution-heading">
      <h4 id="attribution-heading">Cause attribution</h4>
      <p>{attributionSummary(a)}</p>
      <ChartPanel
        title={title}
        csv={() => attributionCsv(a)}
        caption={[
          `${a.metric === "kl_mean" ? "Mean KL against the golden model" : "MSE against the golden model"}, the techniques applied one after the other:`,
          "each bar is what a technique adds (red) or takes away (green) on top of the ones before it; blue is the whole configuration.",
          `Whole configuration: ${formatMetric(a, a.total)}. Removed when left out: its value minus that of every technique but this one. Interaction (total − sum of each alone): ${formatMetric(a, a.interaction)}.`,
        ].join(" ")}
      >
        <Plot data={figure.data} layout={figure.layout} filename={slug(title)} height={300} />
        <table className="table compact" aria-label="Cause attribution per technique">
          <thead>
            <tr>
              <th>Technique</th>
              <th className="num">Alone</th>
              <th className="num">Added in order</th>
              <th className="num">Removed when left out</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={`${String(i)}-${r.label}`}>
                <td>{r.label}</td>
                <td className="num">{formatMetric(a, r.alone)}</td>
                <td className="num">{formatMetric(a, r.added)}</td>
                <td className="num">
                  {formatMetric(a, r.removed)}
                  {r.removedShare !== null && ` (${formatPercent(r.removedShare, 0)})`}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </ChartPanel>
      {a.notes.map((n) => (
        <p key={n} className="muted small-text">
          {n}
        </p>
      ))}
      {a.evaluations.length > 0 && (
        <details className="more-settings">
          <summary>Subsets measured ({a.evaluations.length})</summary>
          <table className="table compact" aria-label="Subsets of the techniques measured">
            <thead>
              <tr>
                <th>Techniques</th>
                <th className="num">KL mean</th>
                <th className="num">MSE</th>
                <th className="num">Top-1 agreement</th>
                <th className="num">Accuracy</th>
              </tr>
            </thead>
            <tbody>
              {evaluationRows(a).map((e, i) => (
                <tr key={i}>
                  <td>{e.techniques}</td>
                  <td className="num">{formatKl(e.fidelity.kl_mean)}</td>
                  <td className="num">{formatNumber(e.fidelity.mse)}</td>
                  <td className="num">{formatPercent(e.fidelity.top1_agreement)}</td>
                  <td className="num">{formatPercent(e.fidelity.accuracy_compressed)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      )}
    </section>
  );
}
