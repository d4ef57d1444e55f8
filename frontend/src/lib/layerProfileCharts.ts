// Plotly figures of the layer profile: SQNR and cosine against depth, one trace per kind, the worst layer
// shaded and ringed, infinite SQNRs at a cap where the axis reads "∞" (layerProfileAxes), a hover per layer.
import type { Dash, Data, Layout, MarkerSymbol, Shape } from "plotly.js";
import type { LayerFidelity, LayerProfile } from "../api/types";
import { formatNumber } from "./format";
import {
  cosineOf,
  formatCosine,
  formatSqnr,
  type Kind,
  kindsOf,
  layersOf,
  shortName,
  sqnrOf,
  statsOf,
  worstLayer,
} from "./layerProfile";
import { infinityAxis, infinityCap } from "./layerProfileAxes";
import { aliasText, layerLabel } from "./layerNames";

export const COLORS: Record<Kind, string> = { accumulated: "#4c78a8", local: "#f58518", qdq_err: "#54a24b" };
const DASHES: Record<Kind, Dash> = { accumulated: "solid", local: "dot", qdq_err: "dash" };
const SYMBOLS: Record<Kind, MarkerSymbol> = { accumulated: "circle", local: "diamond", qdq_err: "square" };
const WORST_COLOR = "#d62728";
const INFINITY_COLOR = "#6b7280";
/** Layers up to which the x axis is labelled with layer names instead of depth numbers. */
export const MAX_NAMED_TICKS = 12;

/** Legend names; the section's text says what they mean. */
export const TRACE_NAMES: Record<Kind, string> = {
  accumulated: "accumulated",
  local: "local",
  qdq_err: "own quantizer (qdq_err)",
};

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** Hover text of a layer: its names, op type, depth and the four numbers (SQNR and cosine, both kinds). */
export function hoverText(layer: LayerFidelity, total: number): string {
  const lines = [
    `<b>${escapeHtml(layerLabel(layer))}</b> (${escapeHtml(layer.op_type)})`,
    ...(aliasText(layer) ? [escapeHtml(aliasText(layer))] : []),
    `depth ${layer.depth.toString()} of ${Math.max(0, total - 1).toString()} (${formatNumber(layer.depth_fraction, 3)})`,
    `SQNR: accumulated ${formatSqnr(layer.accumulated)}, local ${formatSqnr(layer.local)}`,
    `cosine: accumulated ${formatCosine(layer.accumulated)}, local ${formatCosine(layer.local)}`,
  ];
  if (layer.qdq_err) {
    lines.push(`own quantizer: SQNR ${formatSqnr(layer.qdq_err)}, cosine ${formatCosine(layer.qdq_err)}`);
  }
  if (layer.local_note) lines.push(`note: ${escapeHtml(layer.local_note)}`);
  return lines.join("<br>");
}

export interface Figure {
  data: Data[];
  layout: Partial<Layout>;
}

function xAxis(layers: readonly LayerFidelity[]): Partial<Layout["xaxis"]> {
  const maxDepth = Math.max(0, ...layers.map((l) => l.depth));
  const range: [number, number] = [-0.5, maxDepth + 0.5];
  if (layers.length <= MAX_NAMED_TICKS)
    return {
      title: { text: "layer (golden model's order, input → output)" },
      range,
      tickvals: layers.map((l) => l.depth),
      ticktext: layers.map((l) => shortName(layerLabel(l))),
      zeroline: false,
    };
  return { title: { text: "layer depth (0 = input)" }, range, zeroline: false };
}

/** A light band behind the worst layer. */
function band(layer: LayerFidelity): Partial<Shape> {
  return {
    type: "rect",
    xref: "x",
    yref: "paper",
    x0: layer.depth - 0.4,
    x1: layer.depth + 0.4,
    y0: 0,
    y1: 1,
    fillcolor: WORST_COLOR,
    opacity: 0.08,
    line: { width: 0 },
    layer: "below",
  };
}

/** A red ring around the worst layer's local value, named in the legend. */
function worstTrace(layer: LayerFidelity, y: number | null): Data {
  return {
    type: "scatter",
    mode: "markers",
    name: "adds the most error",
    x: [layer.depth],
    y: [y],
    marker: { color: WORST_COLOR, size: 18, symbol: "circle-open", line: { width: 2 } },
    hoverinfo: "skip",
  };
}

const LEGEND: Partial<Layout["legend"]> = { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" };

/** Room on the left for the y ticks: cosines near 1 need more digits than SQNRs in dB. */
function margins(layers: readonly LayerFidelity[], left: number): Partial<Layout["margin"]> {
  return { l: left, r: 20, t: 40, b: layers.length <= MAX_NAMED_TICKS ? 80 : 50 };
}

/**
 * SQNR (dB) against depth: one trace per kind. Infinite values sit at the cap, where the axis reads "∞", on
 * a dotted line, ringed by the triangles of a trace that only exists when some SQNR is infinite; the worst
 * layer is shaded and its local value ringed in red by a last trace. Both are named in the legend.
 */
export function sqnrFigure(profile: LayerProfile): Figure {
  const layers = layersOf(profile);
  const cap = infinityCap(layers);
  const worst = worstLayer(layers);
  const hover = layers.map((l) => hoverText(l, layers.length));
  const data: Data[] = kindsOf(layers).map((kind) => ({
    type: "scatter",
    mode: "lines+markers",
    name: TRACE_NAMES[kind],
    x: layers.map((l) => l.depth),
    y: layers.map((l) => {
      const v = sqnrOf(statsOf(l, kind));
      return v === Number.POSITIVE_INFINITY ? cap : v;
    }),
    connectgaps: false,
    line: { color: COLORS[kind], width: 2, dash: DASHES[kind] },
    marker: { color: COLORS[kind], size: 8, symbol: SYMBOLS[kind] },
    hovertext: hover,
    hoverinfo: "text",
  }));
  const shapes: Partial<Shape>[] = [];
  const axis = infinityAxis(layers);
  if (axis) {
    const infinite = layers.flatMap((l) =>
      kindsOf(layers)
        .filter((k) => sqnrOf(statsOf(l, k)) === Number.POSITIVE_INFINITY)
        .map(() => l.depth),
    );
    data.push({
      type: "scatter",
      mode: "markers",
      name: "+∞ (identical outputs)",
      x: infinite,
      y: infinite.map(() => cap),
      marker: { color: INFINITY_COLOR, size: 17, symbol: "triangle-up-open", line: { width: 2 } },
      hoverinfo: "skip",
    });
    shapes.push({
      type: "line",
      xref: "paper",
      yref: "y",
      x0: 0,
      x1: 1,
      y0: cap,
      y1: cap,
      line: { color: INFINITY_COLOR, width: 1, dash: "dot" },
    });
  }
  if (worst) {
    shapes.push(band(worst));
    data.push(worstTrace(worst, sqnrOf(worst.local)));
  }
  return {
    data,
    layout: {
      xaxis: xAxis(layers),
      yaxis: { title: { text: "SQNR (dB), higher is better" }, ...(axis ?? {}) },
      legend: LEGEND,
      shapes,
      hovermode: "closest",
      margin: margins(layers, 60),
    },
  };
}

/** Mean per-sample cosine against depth, one trace per kind; missing values are gaps. */
export function cosineFigure(profile: LayerProfile): Figure {
  const layers = layersOf(profile);
  const worst = worstLayer(layers);
  const data: Data[] = kindsOf(layers).map((kind) => ({
    type: "scatter",
    mode: "lines+markers",
    name: TRACE_NAMES[kind],
    x: layers.map((l) => l.depth),
    y: layers.map((l) => cosineOf(statsOf(l, kind))),
    connectgaps: false,
    line: { color: COLORS[kind], width: 2, dash: DASHES[kind] },
    marker: { color: COLORS[kind], size: 8, symbol: SYMBOLS[kind] },
    hovertext: layers.map((l) => hoverText(l, layers.length)),
    hoverinfo: "text",
  }));
  if (worst) data.push(worstTrace(worst, cosineOf(worst.local)));
  return {
    data,
    layout: {
      xaxis: xAxis(layers),
      yaxis: { title: { text: "cosine mean, higher is better" }, tickformat: ".6~f", automargin: true },
      legend: LEGEND,
      shapes: worst ? [band(worst)] : [],
      hovermode: "closest",
      margin: margins(layers, 84),
    },
  };
}
