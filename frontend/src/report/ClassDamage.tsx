// Per-class damage of a classification output: the golden → compressed confusion heatmap (numbers in the
// cells; click a cell for its samples), per-class bars of the accuracy drop (or disagreement), and the
// confident flips (seed 003 "label flipping") with their sample indexes.
import type { Data, Layout, PlotDatum } from "plotly.js";
import { useMemo, useState } from "react";
import { ApiError } from "../api/http";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber, formatPercent } from "../lib/format";
import {
  CONFUSION_COLOURS,
  confusionColours,
  confusionView,
  damageBars,
  noDamage,
  type OutputClasses,
} from "./diagnostics";
import { useCellSamples, useFidelityClasses } from "./diagnosticsQueries";
import { TaskScores } from "./TaskScores";
import { useRevealOnOpen } from "../components/reveal";

interface Cell {
  golden: number;
  compressed: number;
}

function Heatmap({ output, onCell }: { output: OutputClasses; onCell: (cell: Cell) => void }) {
  const view = useMemo(
    () =>
      confusionView(
        output.confusion.cells,
        output.classes.map((c) => c.class_index),
      ),
    [output],
  );
  const labels = useMemo(() => view.classes.map((k) => k.toString()), [view]);
  const data = useMemo<Data[]>(
    () => [
      {
        type: "heatmap",
        x: labels,
        y: labels,
        z: confusionColours(view.counts),
        text: view.counts.map((row) => row.map((n) => (n ? n.toString() : ""))) as unknown as string[],
        texttemplate: "%{text}",
        hovertemplate: "golden %{y} → compressed %{x}: %{text} samples<extra></extra>",
        colorscale: CONFUSION_COLOURS,
        zmin: -1,
        zmax: 1,
        showscale: false,
      },
    ],
    [view, labels],
  );
  const layout = useMemo<Partial<Layout>>(
    () => ({
      xaxis: { title: { text: "compressed predicted class" }, type: "category" },
      yaxis: { title: { text: "golden predicted class" }, type: "category", autorange: "reversed" },
      margin: { l: 70, r: 20, t: 10, b: 60 },
    }),
    [],
  );
  const click = (point: PlotDatum) => {
    onCell({ golden: Number(point.y), compressed: Number(point.x) });
  };
  return (
    <ChartPanel
      title="Confusion: golden → compressed"
      caption={
        <>
          Rows: the golden model&apos;s class, columns: the compressed model&apos;s; off-diagonal cells are flips. Grey:
          both models agree; red: flips, darker for a larger share of the row (the worst flip darkest). Click a cell to
          list its samples.
          {view.hidden > 0 &&
            ` ${view.hidden.toString()} of ${view.total.toString()} samples fall outside the ${view.classes.length.toString()} most damaged classes shown.`}
        </>
      }
      csv={() => ({
        header: ["golden_class", "compressed_class", "samples"],
        rows: output.confusion.cells.map(([g, c, n]) => [g, c, n]),
      })}
    >
      <Plot data={data} layout={layout} filename="confusion" height={360} onClick={click} />
    </ChartPanel>
  );
}

function DamageBars({ output }: { output: OutputClasses }) {
  const { measure, bars } = useMemo(() => damageBars(output), [output]);
  const data = useMemo<Data[]>(
    () => [
      {
        type: "bar",
        x: bars.map((b) => b.label),
        y: bars.map((b) => b.value),
        marker: { color: "#e45756" },
        hovertemplate: "%{x}: %{y:.3g}<extra></extra>",
      },
    ],
    [bars],
  );
  const layout = useMemo<Partial<Layout>>(
    () => ({
      yaxis: { title: { text: measure } },
      xaxis: { type: "category" },
      margin: { l: 60, r: 20, t: 10, b: 70 },
    }),
    [measure],
  );
  if (noDamage(bars)) {
    // no bars to draw: words, not an empty chart (nor a chart frame without a chart)
    return (
      <section className="panel" aria-label="Most damaged classes">
        <h3>Most damaged classes</h3>
        <p>
          No class lost {output.by === "label" ? "accuracy" : "agreement with the golden model"}: every class is as good
          as the golden model on this dataset.
        </p>
      </section>
    );
  }
  return (
    <ChartPanel
      title="Most damaged classes"
      caption={`Per class, most damaged first; grouped by ${output.by === "label" ? "label" : "golden predicted class (no labels)"}.`}
      csv={() => ({
        header: [
          "class",
          "samples",
          "kl_mean_nats",
          "top1_agreement",
          "golden_accuracy",
          "compressed_accuracy",
          "accuracy_drop_pp",
          "confident_flips",
        ],
        rows: output.classes.map((c) => [
          c.class_index,
          c.n,
          c.kl_mean_nats,
          c.top1_agreement,
          c.golden_accuracy,
          c.compressed_accuracy,
          c.accuracy_drop_pp,
          c.confident_flips,
        ]),
      })}
    >
      <Plot data={data} layout={layout} filename="class-damage" />
    </ChartPanel>
  );
}

function CellSamples({ jobId, cell, onSample }: { jobId: string; cell: Cell; onSample: (index: number) => void }) {
  const samples = useCellSamples(jobId, cell);
  const panel = useRevealOnOpen<HTMLDivElement>(`${cell.golden.toString()}-${cell.compressed.toString()}`);
  return (
    <div ref={panel} className="panel" aria-live="polite">
      <h3>
        Samples golden {cell.golden} → compressed {cell.compressed}
      </h3>
      {samples.isPending ? (
        <Loading what="the samples" />
      ) : samples.isError ? (
        <ErrorMessage error={samples.error} />
      ) : (
        <>
          <p className="muted">
            {samples.data.total} samples{samples.data.total > samples.data.items.length ? " (first 100 by KL)" : ""}.
            Click one to highlight it in the per-sample table.
          </p>
          <ul className="chips" aria-label="Samples of the cell">
            {samples.data.items.map((s) => (
              <li key={s.sample_index}>
                <button
                  type="button"
                  className="small"
                  onClick={() => {
                    onSample(s.sample_index);
                  }}
                >
                  #{s.sample_index} (KL {formatNumber(s.kl, 3)})
                </button>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

function ConfidentFlips({ output, onSample }: { output: OutputClasses; onSample: (index: number) => void }) {
  const flips = output.confident_flips;
  const threshold = output.flip_confidence ?? 0.9;
  return (
    <div className="panel">
      <h3>Confident flips</h3>
      <p className="muted">
        {flips.count} samples the golden model got right with probability ≥ {formatNumber(threshold, 3)} that the
        compressed model gets wrong with probability ≥ {formatNumber(threshold, 3)}
        {output.by === "label" ? "" : " (no labels: the golden prediction stands in for the label)"}
        {flips.capped ? `; the first ${flips.stored.toString()} are listed` : ""}.
      </p>
      {flips.items.length > 0 && (
        <table className="compact">
          <thead>
            <tr>
              <th>Sample</th>
              <th>Label</th>
              <th>Golden</th>
              <th>Compressed</th>
            </tr>
          </thead>
          <tbody>
            {flips.items.slice(0, 50).map((f) => (
              <tr key={f.index}>
                <td>
                  <button
                    type="button"
                    className="small"
                    onClick={() => {
                      onSample(f.index);
                    }}
                  >
                    #{f.index}
                  </button>
                </td>
                <td>{f.label ?? "—"}</td>
                <td>
                  {f.golden_class} ({formatPercent(f.golden_probability, 1)})
                </td>
                <td>
                  {f.compressed_class} ({formatPercent(f.compressed_probability, 1)})
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** The per-class damage section of the report; nothing when the job has no classification output. */
export function ClassDamage({ jobId, onSample }: { jobId: string; onSample: (index: number) => void }) {
  const classes = useFidelityClasses(jobId);
  const [cell, setCell] = useState<Cell | null>(null);
  if (classes.isError && classes.error instanceof ApiError && classes.error.status === 404) return null;
  const name = classes.data?.primary_output ?? "";
  const output = classes.data?.outputs[name] ?? Object.values(classes.data?.outputs ?? {})[0];
  return (
    <section aria-labelledby="class-damage-heading">
      <h2 id="class-damage-heading">Which classes are hurt</h2>
      {classes.isPending ? (
        <Loading what="the per-class damage" />
      ) : classes.isError ? (
        <ErrorMessage error={classes.error} />
      ) : !output ? (
        <p className="muted">No classification output.</p>
      ) : (
        <>
          <div className="two-col">
            <Heatmap output={output} onCell={setCell} />
            <DamageBars output={output} />
          </div>
          {cell && <CellSamples jobId={jobId} cell={cell} onSample={onSample} />}
          <TaskScores output={output} />
          <ConfidentFlips output={output} onSample={onSample} />
        </>
      )}
    </section>
  );
}
