// The per-layer profile of a fidelity job (GET /jobs/{id}/fidelity/layers) shaped for the report: Plotly
// figures of SQNR and cosine against depth, the layer that adds the most error, CSV rows and table sorting.
//
// Accumulated stats compare the compressed network up to a layer with the golden one (the error carried so
// far); local stats run one compressed layer alone on the golden layer's inputs (the error it adds). An SQNR
// of +∞ (identical outputs) arrives as sqnr_db = null with sqnr_db_infinite = true: it is drawn at a cap
// above every finite value, with its own marker and "∞" in the hover, never dropped. A null that is not
// infinite (the number could not be computed) is a gap in the line. A QDQ model's profile also carries, per
// re-quantized tensor, the error of the model's own quantizer there (qdq_err: the tensor entering its
// QuantizeLinear vs its DequantizeLinear's output, as onnxruntime's qdq_loss_debug reports it): drawn as a
// third trace only when some layer has it.
import type { Dash, Data, Layout, MarkerSymbol, Shape } from "plotly.js";
import type { LayerFidelity, LayerProfile, LayerStats } from "../api/types";
import type { Cell } from "./csv";
import { formatNumber } from "./format";

export type Kind = "accumulated" | "local" | "qdq_err";
export const KINDS: readonly Kind[] = ["accumulated", "local", "qdq_err"];
/** The kinds every layer has (qdq_err exists only where the compressed model re-quantizes a tensor). */
const LAYER_KINDS: readonly Kind[] = ["accumulated", "local"];

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

/** The kinds a profile has values of: accumulated and local always, qdq_err when some layer has it. */
export function kindsOf(layers: readonly LayerFidelity[]): Kind[] {
  return KINDS.filter((kind) => kind !== "qdq_err" || layers.some((l) => l.qdq_err));
}

export function layersOf(profile: LayerProfile): LayerFidelity[] {
  return profile.layers ?? [];
}

function statsOf(layer: LayerFidelity, kind: Kind): LayerStats | null {
  if (kind === "qdq_err") return layer.qdq_err ?? null;
  return kind === "accumulated" ? layer.accumulated : layer.local;
}

const finite = (v: number | null | undefined): v is number => typeof v === "number" && Number.isFinite(v);

/** SQNR in dB as a number: +Infinity when the outputs are identical, null when there is none. */
export function sqnrOf(stats: LayerStats | null | undefined): number | null {
  if (!stats) return null;
  if (stats.sqnr_db_infinite) return Number.POSITIVE_INFINITY;
  return finite(stats.sqnr_db) ? stats.sqnr_db : null;
}

export function cosineOf(stats: LayerStats | null | undefined): number | null {
  return finite(stats?.cosine_mean) ? stats.cosine_mean : null;
}

/** "42.07 dB", "∞ dB" or "—". */
export function formatSqnr(stats: LayerStats | null | undefined, unit = " dB"): string {
  const v = sqnrOf(stats);
  if (v === null) return "—";
  return v === Number.POSITIVE_INFINITY ? `∞${unit}` : `${formatNumber(v)}${unit}`;
}

export function formatCosine(stats: LayerStats | null | undefined): string {
  return formatNumber(cosineOf(stats), 6);
}

/**
 * The layer that adds the most error: the lowest finite local SQNR (the earliest layer on a tie). Null when
 * no layer has a finite local SQNR (all identical, or no local comparison could be made).
 */
export function worstLayer(layers: readonly LayerFidelity[]): LayerFidelity | null {
  let worst: LayerFidelity | null = null;
  let worstValue = Number.POSITIVE_INFINITY;
  for (const layer of layers) {
    const v = sqnrOf(layer.local);
    if (
      v !== null &&
      Number.isFinite(v) &&
      (v < worstValue || (v === worstValue && worst && layer.depth < worst.depth))
    ) {
      worst = layer;
      worstValue = v;
    }
  }
  return worst;
}

function finiteSqnrs(layers: readonly LayerFidelity[]): number[] {
  return layers
    .flatMap((l) => KINDS.map((k) => sqnrOf(statsOf(l, k))))
    .filter((v): v is number => v !== null && Number.isFinite(v));
}

/**
 * The y at which infinite SQNRs are drawn: clearly above every finite SQNR (at least 5 dB and a quarter of
 * their spread), where the axis reads "∞" instead of a number. 0 when no SQNR is finite.
 */
export function infinityCap(layers: readonly LayerFidelity[]): number {
  const values = finiteSqnrs(layers);
  if (values.length === 0) return 0;
  const hi = Math.max(...values);
  const lo = Math.min(...values);
  return hi + Math.max(5, 0.25 * (hi - lo));
}

/** About `target` round tick values (steps of 1, 2 or 5 × 10ⁿ) within [lo, hi]. */
export function niceTicks(lo: number, hi: number, target = 5): number[] {
  if (!(hi > lo)) return Number.isFinite(lo) ? [lo] : [];
  const raw = (hi - lo) / target;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / magnitude; // 1 ≤ norm < 10
  const step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  const ticks: number[] = [];
  for (let i = Math.ceil(lo / step); i * step <= hi + step * 1e-9; i += 1)
    ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

export interface InfinityAxis {
  tickvals: number[];
  ticktext: string[];
}

/**
 * The SQNR axis ticks when some SQNR is infinite: round ticks over the finite values, and "∞" at the cap.
 * Null when nothing is infinite (Plotly's own ticks and range then).
 */
export function infinityAxis(layers: readonly LayerFidelity[]): InfinityAxis | null {
  if (countInfinite(layers) === 0) return null;
  const cap = infinityCap(layers);
  const values = finiteSqnrs(layers);
  if (values.length === 0) return { tickvals: [cap], ticktext: ["∞"] };
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  // No number tick crowding the ∞ one. Plotly still sets the range (room for markers and the arrow).
  const ticks = niceTicks(lo, hi).filter((t) => cap - t >= 0.1 * (cap - lo));
  return {
    tickvals: [...ticks, cap],
    ticktext: [...ticks.map((t) => formatNumber(t)), "∞"],
  };
}

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** Hover text of a layer: its names, op type, depth and the four numbers (SQNR and cosine, both kinds). */
export function hoverText(layer: LayerFidelity, total: number): string {
  const lines = [
    `<b>${escapeHtml(layer.name)}</b> (${escapeHtml(layer.op_type)})`,
    `compressed: ${escapeHtml(layer.compressed_name)}`,
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

/** "…ce.0/Conv_output_0": the end of a long name, which is the specific part of ONNX and module paths. */
export function shortName(name: string, max = 16): string {
  return name.length <= max ? name : `…${name.slice(name.length - max + 1)}`;
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
      ticktext: layers.map((l) => shortName(l.name)),
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

export interface CsvData {
  header: string[];
  rows: Cell[][];
}

const ID_COLUMNS = ["depth", "depth_fraction", "name", "compressed_name", "op_type"];
const idCells = (l: LayerFidelity): Cell[] => [l.depth, l.depth_fraction, l.name, l.compressed_name, l.op_type];

/** An SQNR for CSV: the number, "inf" for identical outputs (as pandas and numpy read it), or empty. */
function sqnrCell(stats: LayerStats | null): Cell {
  const v = sqnrOf(stats);
  return v === Number.POSITIVE_INFINITY ? "inf" : v;
}

export function sqnrCsv(profile: LayerProfile): CsvData {
  return {
    header: [...ID_COLUMNS, "accumulated_sqnr_db", "local_sqnr_db", "qdq_err_sqnr_db", "local_note"],
    rows: layersOf(profile).map((l) => [
      ...idCells(l),
      sqnrCell(l.accumulated),
      sqnrCell(l.local),
      sqnrCell(l.qdq_err ?? null),
      l.local_note,
    ]),
  };
}

export function cosineCsv(profile: LayerProfile): CsvData {
  return {
    header: [
      ...ID_COLUMNS,
      "accumulated_cosine_mean",
      "accumulated_cosine_min",
      "local_cosine_mean",
      "local_cosine_min",
      "local_note",
    ],
    rows: layersOf(profile).map((l) => [
      ...idCells(l),
      l.accumulated.cosine_mean,
      l.accumulated.cosine_min,
      l.local?.cosine_mean,
      l.local?.cosine_min,
      l.local_note,
    ]),
  };
}

export type LayerSortKey =
  "depth" | "name" | "op_type" | "accumulated_sqnr" | "local_sqnr" | "accumulated_cosine" | "local_cosine";
export type SortOrder = "asc" | "desc";

function sortValue(layer: LayerFidelity, key: LayerSortKey): number | string | null {
  switch (key) {
    case "depth":
      return layer.depth;
    case "name":
      return layer.name;
    case "op_type":
      return layer.op_type;
    case "accumulated_sqnr":
      return sqnrOf(layer.accumulated);
    case "local_sqnr":
      return sqnrOf(layer.local);
    case "accumulated_cosine":
      return cosineOf(layer.accumulated);
    case "local_cosine":
      return cosineOf(layer.local);
  }
}

/** Layers sorted by a column; missing values last in either order, ties by depth. ∞ sorts above every number. */
export function sortLayers(layers: readonly LayerFidelity[], key: LayerSortKey, order: SortOrder): LayerFidelity[] {
  const sign = order === "asc" ? 1 : -1;
  return [...layers].sort((a, b) => {
    const va = sortValue(a, key);
    const vb = sortValue(b, key);
    if (va === null || vb === null) {
      if (va !== vb) return va === null ? 1 : -1;
      return a.depth - b.depth;
    }
    const cmp =
      typeof va === "number" && typeof vb === "number"
        ? va === vb
          ? 0
          : va < vb
            ? -1
            : 1
        : String(va).localeCompare(String(vb));
    return cmp === 0 ? a.depth - b.depth : sign * cmp;
  });
}

/** How many SQNR values (of both kinds) are +∞. */
export function countInfinite(layers: readonly LayerFidelity[]): number {
  return layers
    .flatMap((l) => LAYER_KINDS.map((k) => sqnrOf(statsOf(l, k))))
    .filter((v) => v === Number.POSITIVE_INFINITY).length;
}

/** How many values of a metric (of both kinds) are missing: the gaps in its chart. */
export function countMissing(layers: readonly LayerFidelity[], metric: "sqnr" | "cosine"): number {
  const read = metric === "sqnr" ? sqnrOf : cosineOf;
  return layers.flatMap((l) => LAYER_KINDS.map((k) => read(statsOf(l, k)))).filter((v) => v === null).length;
}

// ----------------------------------------------------------------------------------------------- kernel gap
// For ONNX pairs the job compares the profile's simulated SQNR at each model output with the SQNR the
// deployed runtime (fused int8 kernels) measured on the same samples; a significant gap means the runtime
// loses more than the per-layer numbers show. Its note is also among the profile's notes.

export type KernelGap = NonNullable<LayerProfile["kernel_gap"]>[number];

/** The outputs whose runtime kernels lose significantly more than simulated quantization. */
export function significantKernelGaps(profile: LayerProfile): KernelGap[] {
  return (profile.kernel_gap ?? []).filter((gap) => gap.significant);
}

function gapSqnr(value: number | null | undefined, infinite: boolean): string {
  if (infinite) return "∞ dB";
  return typeof value === "number" && Number.isFinite(value) ? `${value.toFixed(1)} dB` : "—";
}

/** "Runtime kernels lose 16.7 dB more than simulated quantization at output logits". */
export function kernelGapHeadline(gap: KernelGap): string {
  const where = `at output ${gap.output}`;
  if (typeof gap.gap_db === "number" && Number.isFinite(gap.gap_db))
    return `Runtime kernels lose ${gap.gap_db.toFixed(1)} dB more than simulated quantization ${where}`;
  return `Runtime kernels add error that simulated quantization does not predict ${where}`;
}

/** "runtime 25.2 dB, simulated 41.8 dB". */
export function kernelGapNumbers(gap: KernelGap): string {
  return `runtime ${gapSqnr(gap.runtime_sqnr_db, gap.runtime_sqnr_db_infinite)}, simulated ${gapSqnr(
    gap.simulated_sqnr_db,
    gap.simulated_sqnr_db_infinite,
  )}`;
}

/** The profile's notes without those the kernel-gap callout already shows. */
export function notesBesideKernelGaps(profile: LayerProfile): string[] {
  const shown = new Set(significantKernelGaps(profile).map((gap) => gap.note));
  return (profile.notes ?? []).filter((note) => !shown.has(note));
}
