// Before and after recovery on the held-out split: each sample's KL before against after (points under the
// diagonal improved), with the top-1 flips fixed and broken; and each golden layer's accumulated SQNR against
// the compressed model before recovery and the recovered one (the fidelity job's layer profile, twice).
import type { Data, Layout } from "plotly.js";
import { useMemo } from "react";
import { ChartPanel } from "../components/ChartPanel";
import { ErrorMessage, Loading } from "../components/QueryView";
import { Plot } from "../components/Plot";
import { layerRows, movesInnerLayers, sampleChanges, type RecoveryLayers } from "./beforeAfter";
import { useRecoveryLayers } from "./queries";
import type { RecoverySummary } from "./recovery";

const BEFORE = "#e45756";
const AFTER = "#54a24b";

function PerSample({ summary }: { summary: RecoverySummary }) {
  const changes = useMemo(() => sampleChanges(summary), [summary]);
  const { data, layout } = useMemo(() => {
    const values = changes.points.flatMap((p) => [p.before, p.after]);
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    const traces: Data[] = [
      {
        type: "scatter",
        mode: "lines",
        name: "no change",
        x: [lo, hi],
        y: [lo, hi],
        line: { color: "#8a94a3", dash: "dot", width: 1 },
        hoverinfo: "skip",
      },
      {
        type: "scatter",
        mode: "markers",
        name: "held-out samples",
        x: changes.points.map((p) => p.before),
        y: changes.points.map((p) => p.after),
        text: changes.points.map((p) => `sample ${p.index.toString()}`),
        marker: { color: AFTER, size: 5, opacity: 0.6 },
        hovertemplate: "%{text}<br>KL before %{x:.3g}<br>after %{y:.3g}<extra></extra>",
      },
    ];
    const plotLayout: Partial<Layout> = {
      xaxis: { title: { text: "KL before recovery (nats)" }, type: "log" },
      yaxis: { title: { text: "KL after (nats)" }, type: "log" },
      showlegend: false,
      margin: { l: 60, r: 20, t: 20, b: 50 },
    };
    return { data: traces, layout: plotLayout };
  }, [changes]);
  if (changes.n === 0) return null;
  return (
    <ChartPanel
      title="Per sample: KL before and after"
      caption={`${changes.improved.toString()} of ${changes.n.toString()} held-out samples closer to the golden model after recovery (under the diagonal), ${changes.worse.toString()} further. Top-1 disagreements fixed: ${changes.fixed.toString()}; new ones: ${changes.broken.toString()}.`}
      csv={() => ({
        header: ["dataset_index", "kl_before", "kl_after"],
        rows: changes.points.map((p) => [p.index, p.before, p.after]),
      })}
    >
      <Plot data={data} layout={layout} filename="recovery-per-sample" height={320} />
    </ChartPanel>
  );
}

function PerLayer({ layers, summary }: { layers: RecoveryLayers; summary: RecoverySummary }) {
  const rows = useMemo(() => layerRows(layers), [layers]);
  const data = useMemo<Data[]>(
    () =>
      (
        [
          ["before recovery", "before", BEFORE],
          ["after", "after", AFTER],
        ] as const
      ).map(([name, key, color]) => ({
        type: "scatter",
        mode: "lines+markers",
        name,
        x: rows.map((r) => r.name),
        y: rows.map((r) => r[key]),
        line: { color },
      })),
    [rows],
  );
  const errors = (["before", "after"] as const).filter((side) => layers[side].error);
  return (
    <ChartPanel
      title="Per layer: accumulated SQNR before and after"
      caption={[
        "Each golden layer against the compressed model before recovery and against the recovered one (higher is closer), on the held-out split.",
        movesInnerLayers(summary)
          ? "Equalization and SmoothQuant rescale inner channels, distillation and QAT retrain every layer for the outputs: inner layers move away from the golden ones by design, so compare the last layers."
          : "",
        rows.some((r) => r.infinite) ? "Layers with identical outputs (+∞ dB) are left off." : "",
      ]
        .filter(Boolean)
        .join(" ")}
      csv={() => ({
        header: ["layer", "sqnr_db_before", "sqnr_db_after"],
        rows: rows.map((r) => [r.name, r.before, r.after]),
      })}
    >
      {errors.map((side) => (
        <p key={side} className="warning" role="alert">
          No per-layer profile {side === "before" ? "before recovery" : "after recovery"}: {layers[side].error}
        </p>
      ))}
      {rows.length > 0 && (
        <Plot
          data={data}
          layout={{
            xaxis: { title: { text: "golden layer" }, automargin: true },
            yaxis: { title: { text: "accumulated SQNR (dB)" } },
            legend: { orientation: "h", x: 0, y: 1.12 },
            margin: { l: 60, r: 20, t: 30, b: 80 },
          }}
          filename="recovery-per-layer"
          height={340}
        />
      )}
    </ChartPanel>
  );
}

export function BeforeAfter({ jobId, summary }: { jobId: string; summary: RecoverySummary }) {
  const layers = useRecoveryLayers(jobId, true);
  return (
    <div className="two-col" data-testid="recovery-before-after">
      <PerSample summary={summary} />
      {layers.isPending ? (
        <Loading what="the per-layer before/after" />
      ) : layers.isError ? (
        <ErrorMessage error={layers.error} />
      ) : (
        <PerLayer layers={layers.data} summary={summary} />
      )}
    </div>
  );
}
