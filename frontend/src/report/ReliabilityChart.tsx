// Reliability diagram of one model: accuracy per confidence bin against the diagonal of perfect calibration.
import type { Data, Layout } from "plotly.js";
import { useMemo } from "react";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { Empty } from "../components/QueryView";
import { formatNumber } from "../lib/format";
import type { Calibration } from "../lib/summary";

// The legend below the axes: the row above the bars holds each bin's sample count.
const LAYOUT: Partial<Layout> = {
  xaxis: { title: { text: "confidence (top-1 probability)" }, range: [0, 1] },
  yaxis: { title: { text: "accuracy" }, range: [0, 1.12], tickvals: [0, 0.2, 0.4, 0.6, 0.8, 1] },
  legend: { orientation: "h", x: 0, y: -0.28 },
  margin: { l: 60, r: 20, t: 32, b: 90 },
};
const COUNT_ROW = 1.06;

export function ReliabilityChart({ role, calibration }: { role: "golden" | "compressed"; calibration: Calibration }) {
  const filled = useMemo(() => calibration.bins.filter((b) => b.count > 0), [calibration]);
  const data = useMemo<Data[]>(
    () => [
      {
        type: "bar",
        name: "accuracy",
        x: filled.map((b) => (b.lower + b.upper) / 2),
        y: filled.map((b) => b.accuracy),
        width: filled.map((b) => b.upper - b.lower),
        marker: { color: role === "golden" ? "#4c78a8" : "#f58518", line: { color: "white", width: 1 } },
        hovertext: filled.map(
          (b) =>
            `${formatNumber(b.lower)}–${formatNumber(b.upper)}: accuracy ${formatNumber(b.accuracy)}, confidence ${formatNumber(b.confidence)}, ${b.count.toString()} samples`,
        ),
        hoverinfo: "text",
      },
      {
        type: "scatter",
        mode: "markers",
        name: "mean confidence",
        x: filled.map((b) => (b.lower + b.upper) / 2),
        y: filled.map((b) => b.confidence),
        marker: { color: "#222", symbol: "line-ew-open", size: 14, line: { width: 2 } },
        hoverinfo: "skip",
      },
      {
        type: "scatter",
        mode: "text",
        name: "samples per bin",
        x: filled.map((b) => (b.lower + b.upper) / 2),
        y: filled.map(() => COUNT_ROW),
        text: filled.map((b) => b.count.toLocaleString("en-US")),
        textfont: { size: 10, color: "#555" },
        hoverinfo: "skip",
        showlegend: false,
      },
      {
        type: "scatter",
        mode: "lines",
        name: "perfect calibration",
        x: [0, 1],
        y: [0, 1],
        line: { color: "#888", dash: "dash" },
        hoverinfo: "skip",
      },
    ],
    [filled, role],
  );
  const title = `Reliability: ${role} model`;
  return (
    <ChartPanel
      title={title}
      caption={`ECE ${formatNumber(calibration.ece)}, MCE ${formatNumber(calibration.mce)}. Bars below the diagonal: over-confident. The numbers above the bars: samples per bin (a bin of few samples says little).`}
      csv={() => ({
        header: ["bin_lower", "bin_upper", "count", "mean_confidence", "accuracy"],
        rows: calibration.bins.map((b) => [b.lower, b.upper, b.count, b.confidence, b.accuracy]),
      })}
    >
      {filled.length === 0 ? (
        <Empty>No calibration bins hold samples.</Empty>
      ) : (
        <Plot data={data} layout={LAYOUT} filename={`reliability-${role}`} />
      )}
    </ChartPanel>
  );
}
