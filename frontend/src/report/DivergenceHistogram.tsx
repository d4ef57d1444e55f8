// Histogram of a per-sample divergence (KL for classification, MSE otherwise) over up to MAX_SAMPLES
// samples, with the flagging threshold and the selected sample drawn as vertical lines.
import type { Data, Layout, Shape } from "plotly.js";
import { useMemo, useState } from "react";
import { useSampleValues } from "../api/fidelity";
import type { Sample } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { Empty, QueryView } from "../components/QueryView";
import { formatNumber } from "../lib/format";
import { histogram, spansDecades, type Histogram } from "../lib/histogram";

const MAX_SAMPLES = 5000;

type Measure = "kl" | "mse";

function vline(x: number, color: string, dash: "dash" | "dot"): Partial<Shape> {
  return { type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1, line: { color, width: 2, dash } };
}

function figure(h: Histogram, measure: Measure, threshold: number | null, selected: number | null) {
  const toX = (v: number) => (h.log ? Math.log10(v) : v);
  const centers = h.counts.map((_, i) => (toX(h.edges[i] ?? 0) + toX(h.edges[i + 1] ?? 0)) / 2);
  const widths = h.counts.map((_, i) => toX(h.edges[i + 1] ?? 0) - toX(h.edges[i] ?? 0));
  const data: Data[] = [
    {
      type: "bar",
      name: "samples",
      x: centers,
      y: h.counts,
      width: widths,
      marker: { color: "#4c78a8", line: { color: "white", width: 1 } },
      hovertext: h.counts.map(
        (n, i) => `${formatNumber(h.edges[i])} – ${formatNumber(h.edges[i + 1])}: ${n.toLocaleString("en-US")} samples`,
      ),
      hoverinfo: "text",
    },
  ];
  const shapes: Partial<Shape>[] = [];
  const annotations: Layout["annotations"] = [];
  const lo = toX(h.edges[0] ?? 0);
  const hi = toX(h.edges[h.edges.length - 1] ?? 0);
  // Each label on its own row inside the plot (threshold at the top, the selected sample below it), on the
  // side of its line with more room: the two never overlap, even when the lines are close, and stay clear
  // of the toolbar in the top margin.
  let row = 0;
  const mark = (value: number | null, color: string, dash: "dash" | "dot", text: string) => {
    if (value === null || (h.log && value <= 0)) return;
    const x = toX(value);
    const right = hi > lo && (x - lo) / (hi - lo) > 0.6;
    shapes.push(vline(x, color, dash));
    annotations.push({
      x,
      y: 1 - 0.12 * row,
      xref: "x",
      yref: "paper",
      text,
      showarrow: false,
      yanchor: "top",
      xanchor: right ? "right" : "left",
      xshift: right ? -4 : 4,
      bgcolor: "rgba(255, 255, 255, 0.85)",
      font: { color },
    });
    row += 1;
  };
  mark(threshold, "#d62728", "dash", `threshold ${formatNumber(threshold)}`);
  mark(selected, "#ff7f0e", "dot", "selected sample");
  const decades = Array.from({ length: Math.floor(hi) - Math.ceil(lo) + 1 }, (_, i) => Math.ceil(lo) + i);
  const label = measure === "kl" ? "KL(P‖Q) per sample, nats" : "MSE per sample";
  const layout: Partial<Layout> = {
    xaxis: h.log
      ? {
          title: { text: `${label} (log scale)` },
          tickvals: decades,
          ticktext: decades.map((d) => `1e${d.toString()}`),
        }
      : { title: { text: label } },
    yaxis: { title: { text: "samples" } },
    shapes,
    annotations,
    margin: { l: 60, r: 20, t: 24, b: 50 },
  };
  return { data, layout };
}

function Chart({
  values,
  total,
  measure,
  threshold,
  selected,
}: {
  values: Sample[];
  total: number;
  measure: Measure;
  threshold: number | null;
  selected: number | null;
}) {
  const name = measure === "kl" ? "KL" : "MSE";
  const numbers = useMemo(() => values.map((s) => s[measure]), [values, measure]);
  const [log, setLog] = useState(() => spansDecades(numbers));
  const h = useMemo(() => histogram(numbers, { log }), [numbers, log]);
  const selectedValue = selected === null ? null : (values.find((s) => s.sample_index === selected)?.[measure] ?? null);
  const selectedText =
    selected === null
      ? ""
      : selectedValue === null
        ? `Sample #${selected.toString()} is not among the samples plotted.`
        : `Dotted line: sample #${selected.toString()} (${name} ${formatNumber(selectedValue)}).`;
  const { data, layout } = useMemo(
    () => figure(h, measure, threshold, selectedValue),
    [h, measure, threshold, selectedValue],
  );
  const caption = [
    values.length < total
      ? `The first ${values.length.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} samples by index (a sample: the table below pages through all of them).`
      : `All ${total.toLocaleString("en-US")} samples.`,
    h.log && h.nonPositive > 0
      ? `${h.nonPositive.toLocaleString("en-US")} samples with ${name} = 0 are not on the log axis.`
      : "",
    h.missing > 0 ? `${h.missing.toLocaleString("en-US")} samples have no finite ${name}.` : "",
    selectedText,
  ]
    .filter(Boolean)
    .join(" ");
  return (
    <ChartPanel
      title={`Per-sample ${name} histogram`}
      caption={caption}
      csv={() => ({
        header: ["bin_lower", "bin_upper", "count"],
        rows: h.counts.map((n, i) => [h.edges[i], h.edges[i + 1], n]),
      })}
    >
      <label className="inline">
        <input
          type="checkbox"
          checked={log}
          onChange={(e) => {
            setLog(e.target.checked);
          }}
        />{" "}
        log scale
      </label>
      {h.counts.length === 0 ? (
        <Empty>
          No sample has a positive finite {name} to plot{log ? " on a log axis" : ""}.
        </Empty>
      ) : (
        <Plot data={data} layout={layout} filename={`${name.toLowerCase()}-histogram`} />
      )}
    </ChartPanel>
  );
}

export function DivergenceHistogram({
  jobId,
  output,
  measure,
  threshold,
  selected,
}: {
  jobId: string;
  output: string;
  measure: Measure;
  threshold: number | null;
  selected: number | null;
}) {
  const values = useSampleValues(jobId, output, MAX_SAMPLES);
  return (
    <QueryView query={values} what="per-sample values">
      {({ items, total }) =>
        total === 0 ? (
          <Empty>This run stored no per-sample values.</Empty>
        ) : (
          <Chart values={items} total={total} measure={measure} threshold={threshold} selected={selected} />
        )
      }
    </QueryView>
  );
}
