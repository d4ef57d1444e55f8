// The report's per-task section (issue 30): per-class AP@.5 and the PR curves of the classes that moved most
// for a detector, per-class IoU for a segmenter, WER split into substitutions / deletions / insertions for a
// speech model, KL by position for a language model. Nothing for other outputs.
import type { Data, Layout } from "plotly.js";
import type { OutputMetrics } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { formatNumber } from "../lib/format";
import { GeneratedText } from "./GeneratedText";
import {
  RECALL_POINTS,
  classApSeries,
  classIouSeries,
  klByPosition,
  werBreakdown,
  worstPrCurves,
  type CtcTask,
  type DetectionTask,
  type LanguageModelTask,
  type SegmentationTask,
  type Series,
} from "./taskBreakdown";

const GOLDEN = "#7f7f7f";
const COMPRESSED = "#d62728";

function colour(name: string): string {
  return name === "golden" ? GOLDEN : COMPRESSED;
}

function bars(series: Series[]): Data[] {
  return series.map((s) => ({ type: "bar", name: s.name, x: s.x, y: s.y, marker: { color: colour(s.name) } }));
}

function seriesCsv(series: Series[]) {
  return {
    header: ["x", ...series.map((s) => s.name)],
    rows: (series[0]?.x ?? []).map((x, i) => [x, ...series.map((s) => s.y[i] ?? null)]),
  };
}

const UNIT_AXIS: Partial<Layout["yaxis"]> = { range: [0, 1.02], automargin: true };

function ClassBars({
  title,
  series,
  yTitle,
  caption,
}: {
  title: string;
  series: Series[];
  yTitle: string;
  caption: string;
}) {
  const layout: Partial<Layout> = {
    barmode: "group",
    bargap: 0.25,
    xaxis: { automargin: true, type: "category" },
    yaxis: { ...UNIT_AXIS, title: { text: yTitle } },
    legend: { orientation: "h", y: -0.25 },
  };
  return (
    <ChartPanel title={title} caption={caption} csv={() => seriesCsv(series)}>
      <Plot data={bars(series)} layout={layout} filename={title.toLowerCase().replace(/\W+/g, "-")} />
    </ChartPanel>
  );
}

function Detection({ task }: { task: DetectionTask }) {
  const series = classApSeries(task);
  const curves = worstPrCurves(task);
  return (
    <>
      <ClassBars
        title="AP@.5 by class"
        series={series}
        yTitle="AP@.5"
        caption={
          task.against_labels
            ? "Each class's AP@.5 against the labels, golden and compressed."
            : "No labels: the compressed detections scored against the golden ones as truth."
        }
      />
      {curves.length > 0 && (
        <ChartPanel
          title="Precision–recall at IoU .5, classes that moved most"
          caption="COCO's interpolated precision at 101 recall points; golden dashed, compressed solid."
          csv={() => ({
            header: [
              "recall",
              ...curves.flatMap((c) => [
                `class ${c.classIndex.toString()} golden`,
                `class ${c.classIndex.toString()} compressed`,
              ]),
            ],
            rows: RECALL_POINTS.map((r, i) => [
              r,
              ...curves.flatMap((c) => [c.golden[i] ?? null, c.compressed[i] ?? null]),
            ]),
          })}
        >
          <Plot
            filename="pr-curves"
            data={curves.flatMap((c, k): Data[] => {
              const name = `class ${c.classIndex.toString()}${c.ap50Drop != null ? ` (AP@.5 −${formatNumber(100 * c.ap50Drop, 2)} pts)` : ""}`;
              const hue = `hsl(${((k * 360) / curves.length).toFixed(0)}, 65%, 42%)`;
              return [
                {
                  type: "scatter",
                  mode: "lines",
                  name: `${name} golden`,
                  x: RECALL_POINTS,
                  y: c.golden,
                  line: { color: hue, dash: "dash" },
                  legendgroup: name,
                  showlegend: false,
                },
                {
                  type: "scatter",
                  mode: "lines",
                  name,
                  x: RECALL_POINTS,
                  y: c.compressed,
                  line: { color: hue },
                  legendgroup: name,
                },
              ];
            })}
            layout={{
              xaxis: { title: { text: "recall" }, range: [0, 1] },
              yaxis: { ...UNIT_AXIS, title: { text: "precision" } },
              legend: { orientation: "h", y: -0.25 },
            }}
          />
        </ChartPanel>
      )}
    </>
  );
}

function Segmentation({ task }: { task: SegmentationTask }) {
  return (
    <ClassBars
      title="IoU by class"
      series={classIouSeries(task)}
      yTitle="IoU"
      caption={
        task.against_masks
          ? "Each class's IoU against the masks, golden and compressed; a missing bar: the class is in neither."
          : "No masks: the compressed label maps scored against the golden ones."
      }
    />
  );
}

function Ctc({ task }: { task: CtcTask }) {
  const rows = werBreakdown(task).filter((r) => r.rates !== null);
  const kinds = ["substitutions", "deletions", "insertions"] as const;
  const palette = { substitutions: "#1f77b4", deletions: "#ff7f0e", insertions: "#9467bd" };
  return (
    <ChartPanel
      title="Word errors by kind"
      caption="Substitutions, deletions and insertions as shares of the reference words: each bar's height is the WER."
      csv={() => ({
        header: ["scored", ...kinds],
        rows: rows.map((r) => [r.model, r.substitutions, r.deletions, r.insertions]),
      })}
    >
      <Plot
        filename="wer-breakdown"
        data={kinds.map((kind): Data => ({
          type: "bar",
          name: kind,
          x: rows.map((r) => r.model),
          y: rows.map((r) => r.rates?.[kind] ?? null),
          marker: { color: palette[kind] },
        }))}
        layout={{
          barmode: "stack",
          bargap: 0.4,
          yaxis: { title: { text: "share of reference words" }, automargin: true, rangemode: "tozero" },
          legend: { orientation: "h", y: -0.2 },
        }}
      />
    </ChartPanel>
  );
}

function LanguageModel({ task }: { task: LanguageModelTask }) {
  const s = klByPosition(task);
  return (
    <>
      {s.y.some((v) => v !== null) && <KlByPosition task={task} />}
      <GeneratedText task={task} />
    </>
  );
}

function KlByPosition({ task }: { task: LanguageModelTask }) {
  const s = klByPosition(task);
  return (
    <ChartPanel
      title="KL by position"
      caption="Mean next-token KL(golden‖compressed) at each position of the context: does the divergence grow along it?"
      csv={() => seriesCsv([s])}
    >
      <Plot
        filename="kl-by-position"
        data={[{ type: "scatter", mode: "lines+markers", name: s.name, x: s.x, y: s.y, line: { color: COMPRESSED } }]}
        layout={{
          xaxis: { title: { text: "position" } },
          yaxis: { title: { text: "KL (nats)" }, rangemode: "tozero", automargin: true },
        }}
      />
    </ChartPanel>
  );
}

/** The task breakdown of an output, or nothing when its task has none. */
export function TaskBreakdown({ metrics }: { metrics: OutputMetrics }) {
  if (metrics.kind !== "tensor" || !metrics.task) return null;
  const task = metrics.task;
  const body =
    task.name === "detection" ? (
      <Detection task={task} />
    ) : task.name === "segmentation" ? (
      <Segmentation task={task} />
    ) : task.name === "ctc" ? (
      <Ctc task={task} />
    ) : task.name === "language_model" ? (
      <LanguageModel task={task} />
    ) : null;
  if (!body) return null;
  return (
    <section aria-label="Task breakdown" className="charts">
      {body}
    </section>
  );
}
