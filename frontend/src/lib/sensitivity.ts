// A sensitivity job's results (GET /jobs/{id}/sensitivity, /all-but, /plans, /channels) shaped for its page:
// the layers × configurations heatmap (colour on a log scale of KL, or −SQNR when the output is not a
// classifier's), hover text, rankings, the whole-model row, mixed-precision plans, channel importance, CSV.
//
// A cell's score is "how much damage": KL(P‖Q) mean in nats for classifiers, else −SQNR in dB; higher means
// more sensitive. A KL of exactly 0 (outputs identical) cannot sit on a log axis: it is drawn one decade below
// the smallest positive KL, where the colour bar reads "0". A null is a cell that could not be computed: a gap
// (grey). In the matrix an SQNR of +∞ (identical outputs) also arrives as null; next to a KL of 0 it is shown
// as ∞.
import type { Annotations, Data, Layout, Shape } from "plotly.js";
import type {
  ChannelImportance,
  MixedPrecisionPlan,
  SensitivityConfig,
  SensitivityLayer,
  SensitivityReport,
} from "../api/types";
import type { Cell } from "./csv";
import { formatNumber, formatPercent } from "./format";
import { isObject, numberAt } from "./json";
import { shortName } from "./layerProfile";
import { niceTicks } from "./layerProfileAxes";

export type Metric = "kl" | "sqnr";
export type View = "only" | "all_but";
type Grid = readonly (readonly (number | null | undefined)[])[];

/** "kl" for classifiers; "sqnr" (anything else) ranks by −SQNR. */
export const metricOf = (rankingMetric: string): Metric => (rankingMetric === "kl" ? "kl" : "sqnr");

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

// ---------------------------------------------------------------------------------------------------------
// Configurations

const fraction = (v: unknown) => (finite(v) ? `${Number((v * 100).toPrecision(3)).toString()} %` : "?");

/** One line a person reads: {"type": "weight_quant", "bits": 4} → "4-bit weights, symmetric, per tensor". */
export function describeConfig(config: unknown): string {
  if (!isObject(config)) return String(config);
  const bits = numberAt(config, "bits");
  switch (config.type) {
    case "weight_quant":
      return `${String(bits ?? 8)}-bit weights, ${config.symmetric === false ? "asymmetric" : "symmetric"}, per ${config.per_channel === true ? "channel" : "tensor"}`;
    case "activation_quant": {
      const calibration = typeof config.calibration === "string" ? config.calibration : "minmax";
      return `${String(bits ?? 8)}-bit activations, ${calibration} range`;
    }
    case "float_cast":
      return `${typeof config.dtype === "string" ? config.dtype : "fp16"} round trip`;
    case "quantize":
      return [config.weights, config.activations]
        .filter((part) => isObject(part))
        .map((part) => describeConfig(part))
        .join(" + ");
    case "magnitude_prune":
      return `${fraction(config.sparsity ?? 0.5)} of weights pruned (magnitude)`;
    case "channel_prune":
      return `${fraction(config.sparsity ?? 0.25)} of channels pruned (${typeof config.norm === "string" ? config.norm : "l1"})`;
    case "low_rank":
      return `low rank, ${fraction(config.rank_ratio ?? 0.5)} of the rank kept`;
    case "noise":
      return `noise of ${String(bits ?? 8)}-bit quantization`;
    case "schedule":
      return Array.isArray(config.stages) ? config.stages.map((s) => describeConfig(s)).join(" → ") : "schedule";
    default:
      return JSON.stringify(config);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Cells and scores

export interface CellValues {
  kl: number | null;
  top1: number | null;
  sqnr: number | null;
}

function at(grid: Grid, i: number, j: number): number | null {
  const v = grid[i]?.[j];
  return finite(v) ? v : null;
}

export function cellAt(report: SensitivityReport, i: number, j: number): CellValues {
  const m = report.matrix;
  return { kl: at(m.kl_mean, i, j), top1: at(m.top1_agreement, i, j), sqnr: at(m.sqnr_db, i, j) };
}

/** Higher = more damage: the KL mean, or −SQNR. Null when the cell has no such number. */
export function cellScore(metric: Metric, cell: CellValues): number | null {
  if (metric === "kl") return cell.kl;
  return cell.sqnr === null ? null : -cell.sqnr;
}

export function scoreGrid(report: SensitivityReport, metric: Metric): (number | null)[][] {
  return report.matrix.rows.map((_, i) =>
    report.matrix.columns.map((__, j) => cellScore(metric, cellAt(report, i, j))),
  );
}

export function formatKl(v: number | null | undefined): string {
  return finite(v) ? `${formatNumber(v)} nats` : "—";
}

/** "42.07 dB"; "∞ dB" when SQNR is missing next to a KL of 0 (identical outputs); "—" otherwise. */
export function formatCellSqnr(sqnr: number | null | undefined, kl: number | null | undefined): string {
  if (finite(sqnr)) return `${formatNumber(sqnr)} dB`;
  return kl === 0 ? "∞ dB" : "—";
}

// ---------------------------------------------------------------------------------------------------------
// Colour axis

export interface ColorAxis {
  /** What Plotly colours: log10(KL) (zeros at `floor`), or −SQNR; null = gap. */
  z: (number | null)[][];
  zmin: number;
  zmax: number;
  tickvals: number[];
  ticktext: string[];
  title: string;
  /** The colour bar's title. */
  short: string;
  log: boolean;
  /** Cells at exactly 0 (drawn at the floor, "0" on the colour bar). */
  zeros: number;
  /** Cells without a number (gaps). */
  missing: number;
}

/** Decades lo..hi, thinned to at most `max` ticks. */
function decades(lo: number, hi: number, max = 8): number[] {
  const first = Math.ceil(lo - 1e-9);
  const last = Math.floor(hi + 1e-9);
  const step = Math.max(1, Math.ceil((last - first + 1) / max));
  const out: number[] = [];
  for (let d = first; d <= last; d += step) out.push(d);
  return out;
}

/** KL on a log colour scale. Zeros (and tiny negative round-off) sit one decade below the smallest positive. */
export function logColorAxis(values: Grid, title = "KL mean (nats)"): ColorAxis {
  const positives = values.flat().filter((v): v is number => finite(v) && v > 0);
  let zeros = 0;
  let missing = 0;
  for (const v of values.flat()) {
    if (!finite(v)) missing += 1;
    else if (v <= 0) zeros += 1;
  }
  if (positives.length === 0) {
    const z = values.map((row) => row.map((v) => (finite(v) ? 0 : null)));
    return {
      z,
      zmin: -1,
      zmax: 1,
      tickvals: zeros ? [0] : [],
      ticktext: zeros ? ["0"] : [],
      title,
      short: "KL<br>nats",
      log: true,
      zeros,
      missing,
    };
  }
  const lo = Math.log10(Math.min(...positives));
  const hi = Math.log10(Math.max(...positives));
  const floor = Math.floor(lo + 1e-9) - 1;
  const z = values.map((row) => row.map((v) => (!finite(v) ? null : v > 0 ? Math.log10(v) : floor)));
  let tickvals = decades(lo, hi);
  if (tickvals.length < 2) tickvals = hi - lo < 1e-9 ? [lo] : [lo, hi];
  const ticktext = tickvals.map((t) => formatNumber(Number((10 ** t).toPrecision(3))));
  if (zeros > 0) {
    tickvals = [floor, ...tickvals];
    ticktext.unshift("0");
  }
  let zmin = zeros > 0 ? floor : lo;
  let zmax = hi;
  if (zmax - zmin < 1e-9) {
    zmin -= 0.5;
    zmax += 0.5;
  }
  return {
    z,
    zmin,
    zmax,
    tickvals,
    ticktext,
    title: `${title}, log scale`,
    short: "KL<br>nats",
    log: true,
    zeros,
    missing,
  };
}

/** −SQNR on a linear colour scale (more damage = darker); the colour bar reads SQNR in dB. */
export function sqnrColorAxis(sqnr: Grid): ColorAxis {
  let missing = 0;
  const z = sqnr.map((row) =>
    row.map((v) => {
      if (!finite(v)) {
        missing += 1;
        return null;
      }
      return -v;
    }),
  );
  const scores = z.flat().filter((v): v is number => v !== null);
  let zmin = scores.length ? Math.min(...scores) : 0;
  let zmax = scores.length ? Math.max(...scores) : 1;
  if (zmax - zmin < 1e-9) {
    zmin -= 1;
    zmax += 1;
  }
  const tickvals = niceTicks(zmin, zmax);
  return {
    z,
    zmin,
    zmax,
    tickvals,
    ticktext: tickvals.map((t) => formatNumber(-t)),
    title: "SQNR (dB), lower = more damage",
    short: "SQNR<br>dB",
    log: false,
    zeros: 0,
    missing,
  };
}

export function colorAxisOf(report: SensitivityReport): ColorAxis {
  return metricOf(report.ranking_metric) === "kl"
    ? logColorAxis(report.matrix.kl_mean)
    : sqnrColorAxis(report.matrix.sqnr_db);
}

// ---------------------------------------------------------------------------------------------------------
// The heatmap

/** Light (robust) to dark red (sensitive). */
export const COLORSCALE: [number, string][] = [
  [0, "#fff7ec"],
  [0.25, "#fdd49e"],
  [0.5, "#fc8d59"],
  [0.75, "#d7301f"],
  [1, "#7f0000"],
];
const GAP_COLOR = "#d9dee5";
const SELECTED_COLOR = "#1d4ed8";

export function layersByName(report: SensitivityReport): Map<string, SensitivityLayer> {
  return new Map(report.layers.map((l) => [l.name, l]));
}

export function configsById(report: SensitivityReport): Map<string, SensitivityConfig> {
  return new Map(report.configs.map((c) => [c.id, c]));
}

/** Hover text of every cell (rows × columns): layer, its type, the configuration and the three numbers. */
export function hoverGrid(report: SensitivityReport): string[][] {
  const layers = layersByName(report);
  const configs = configsById(report);
  const allBut = report.mode === "all_but";
  return report.matrix.rows.map((row, i) => {
    const layer = layers.get(row);
    const head = `${allBut ? "all but " : ""}<b>${escapeHtml(row)}</b> (${escapeHtml(layer?.type ?? "?")})`;
    return report.matrix.columns.map((column, j) => {
      const c = cellAt(report, i, j);
      const config = configs.get(column);
      return [
        head,
        `config: <b>${escapeHtml(column)}</b>${config ? ` — ${escapeHtml(describeConfig(config.config))}` : ""}`,
        `KL mean: ${formatKl(c.kl)}`,
        `top-1 agreement: ${formatPercent(c.top1)}`,
        `SQNR: ${formatCellSqnr(c.sqnr, c.kl)}`,
      ].join("<br>");
    });
  });
}

/** Pixels per layer row: readable names for small models, still scrollable for 500 layers. */
export function rowHeight(rows: number): number {
  if (rows <= 10) return 40;
  if (rows <= 25) return 30;
  if (rows <= 60) return 20;
  if (rows <= 150) return 14;
  return 10;
}

export interface HeatmapFigure {
  data: Data[];
  layout: Partial<Layout>;
  height: number;
  axis: ColorAxis;
}

/** The layers × configurations heatmap; rows in depth order from the top, the selected layer outlined. */
export function heatmapFigure(report: SensitivityReport, selected: string | null): HeatmapFigure {
  const { rows, columns } = report.matrix;
  const axis = colorAxisOf(report);
  const rowPx = rowHeight(rows.length);
  const labelEvery = rowPx >= 14 ? 1 : 2;
  const tickvals = rows.map((_, i) => i).filter((i) => i % labelEvery === 0);
  const ticktext = tickvals.map((i) => shortName(rows[i] ?? "", 32));
  const longest = Math.max(4, ...ticktext.map((t) => t.length));
  const longestColumn = Math.max(4, ...columns.map((c) => c.length));
  const angled = columns.length > 5 || longestColumn * 7 * columns.length > 700;
  const margin = {
    l: Math.min(260, 16 + longest * 7),
    r: 20,
    t: angled ? Math.min(140, 24 + longestColumn * 5.5) : 40,
    b: 10,
  };
  const height = Math.max(220, rows.length * rowPx + margin.t + margin.b);
  const gaps = rows.length <= 60 && columns.length <= 40 ? 1 : 0;
  const data: Data[] = [
    {
      type: "heatmap",
      name: report.mode === "all_but" ? "all but" : "only",
      x: columns,
      y: rows.map((_, i) => i),
      z: axis.z,
      zmin: axis.zmin,
      zmax: axis.zmax,
      text: hoverGrid(report) as unknown as string[],
      hovertemplate: "%{text}<extra></extra>",
      hoverongaps: false,
      colorscale: COLORSCALE,
      xgap: gaps,
      ygap: gaps,
      colorbar: {
        title: { text: axis.short, side: "top" },
        tickvals: axis.tickvals,
        ticktext: axis.ticktext,
        lenmode: "pixels",
        len: Math.min(320, height - margin.t - margin.b),
        y: 1,
        yanchor: "top",
        thickness: 14,
      },
    },
  ];
  const index = selected === null ? -1 : rows.indexOf(selected);
  const shapes: Partial<Shape>[] =
    index < 0
      ? []
      : [
          {
            type: "rect",
            xref: "paper",
            yref: "y",
            x0: 0,
            x1: 1,
            y0: index - 0.5,
            y1: index + 0.5,
            line: { color: SELECTED_COLOR, width: 3 },
            fillcolor: "rgba(0,0,0,0)",
          },
        ];
  const layout: Partial<Layout> = {
    margin,
    plot_bgcolor: GAP_COLOR,
    xaxis: { side: "top", tickangle: angled ? -35 : 0, type: "category", fixedrange: false },
    yaxis: {
      autorange: "reversed",
      tickvals,
      ticktext,
      tickfont: { size: rowPx >= 20 ? 12 : 10 },
      zeroline: false,
      showgrid: false,
    },
    shapes,
    annotations: cellLabels(report, axis),
    hoverlabel: { align: "left" },
  };
  return { data, layout, height, axis };
}

/** Cells of a small heatmap (up to 400) labelled with their number (KL or SQNR, 2 significant digits),
 * white on the dark half of the colour scale; a larger one keeps its numbers in the hover text only. */
export function cellLabels(report: SensitivityReport, axis: ColorAxis): Partial<Annotations>[] {
  const { rows, columns } = report.matrix;
  if (rows.length * columns.length > 400 || rowHeight(rows.length) < 20) return [];
  const kl = metricOf(report.ranking_metric) === "kl";
  const labels: Partial<Annotations>[] = [];
  rows.forEach((_, i) => {
    columns.forEach((column, j) => {
      const c = cellAt(report, i, j);
      const v = kl ? c.kl : c.sqnr;
      const z = axis.z[i]?.[j];
      if (!finite(v) || z === null || z === undefined) return;
      const dark = (z - axis.zmin) / (axis.zmax - axis.zmin || 1) > 0.55;
      labels.push({
        x: column,
        y: i,
        xref: "x",
        yref: "y",
        text: v === 0 ? "0" : Number(v.toPrecision(2)).toString(),
        showarrow: false,
        font: { size: 10, color: dark ? "white" : "#222" },
      });
    });
  });
  return labels;
}

/** The heatmap's numbers in long form (one line per cell), with each layer's metadata. */
export function matrixCsv(report: SensitivityReport): { header: string[]; rows: Cell[][] } {
  const layers = layersByName(report);
  const rows: Cell[][] = [];
  report.matrix.rows.forEach((name, i) => {
    const layer = layers.get(name);
    report.matrix.columns.forEach((column, j) => {
      const c = cellAt(report, i, j);
      rows.push([
        report.mode,
        name,
        layer?.type,
        layer?.depth_index,
        layer?.depth_fraction,
        column,
        c.kl,
        c.top1,
        c.sqnr,
      ]);
    });
  });
  return {
    header: [
      "mode",
      "layer",
      "type",
      "depth_index",
      "depth_fraction",
      "config",
      "kl_mean",
      "top1_agreement",
      "sqnr_db",
    ],
    rows,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Rankings

/**
 * Layers most sensitive first, as the engine ranks them: by the mean score over the configurations (or one
 * configuration's score), ties by the larger maximum, then depth order; layers without a score last.
 * `ascending` turns it round (the all-but view: leaving the layer in float lowering the damage the most).
 */
export function rankLayers(
  rows: readonly string[],
  columns: readonly string[],
  scores: Grid,
  config: string | null,
  ascending = false,
): string[] {
  const column = config === null ? -1 : columns.indexOf(config);
  const sign = ascending ? -1 : 1;
  const keyed = rows.map((name, i) => {
    const values = (column >= 0 ? [scores[i]?.[column]] : (scores[i] ?? []))
      .filter((v): v is number => finite(v))
      .map((v) => sign * v);
    const mean = values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NEGATIVE_INFINITY;
    const max = values.length ? Math.max(...values) : Number.NEGATIVE_INFINITY;
    return { name, i, mean, max };
  });
  keyed.sort((a, b) => b.mean - a.mean || b.max - a.max || a.i - b.i);
  return keyed.map((k) => k.name);
}

/** A ranking the API sent (ranking.overall / ranking.by_config.ID), if it names exactly the matrix's rows. */
function apiRanking(report: SensitivityReport, config: string | null): string[] | null {
  const list = (config === null ? report.ranking.overall : report.ranking.by_config[config]) ?? [];
  const rows = new Set(report.matrix.rows);
  if (list.length !== rows.size || !list.every((name) => rows.has(name))) return null;
  return list;
}

/**
 * Layers most sensitive first: the API's ranking when it names exactly the matrix's rows. Each layer
 * compressed alone: highest score first. All but each layer: lowest score first, since keeping a sensitive
 * layer in float removes the most damage (the API ranks that view the same way).
 */
export function rankingOf(report: SensitivityReport, config: string | null): string[] {
  const metric = metricOf(report.ranking_metric);
  const fromApi = apiRanking(report, config);
  if (fromApi) return fromApi;
  return rankLayers(
    report.matrix.rows,
    report.matrix.columns,
    scoreGrid(report, metric),
    config,
    report.mode === "all_but",
  );
}

export interface RankedLayer {
  rank: number;
  name: string;
  type: string;
  /** The mean score over the configurations, or the one configuration's. */
  score: number | null;
}

export function rankedLayers(report: SensitivityReport, config: string | null): RankedLayer[] {
  const metric = metricOf(report.ranking_metric);
  const grid = scoreGrid(report, metric);
  const rowOf = new Map(report.matrix.rows.map((name, i) => [name, i]));
  const column = config === null ? -1 : report.matrix.columns.indexOf(config);
  const layers = layersByName(report);
  return rankingOf(report, config).map((name, rank) => {
    const values = grid[rowOf.get(name) ?? -1] ?? [];
    const picked = (column >= 0 ? [values[column]] : values).filter((v): v is number => finite(v));
    return {
      rank: rank + 1,
      name,
      type: layers.get(name)?.type ?? "?",
      score: picked.length ? picked.reduce((a, b) => a + b, 0) / picked.length : null,
    };
  });
}

/** A score as read: KL in nats, or −SQNR shown as the SQNR it stands for. */
export function formatScore(metric: Metric, score: number | null): string {
  if (score === null) return "—";
  return metric === "kl" ? formatKl(score) : `${formatNumber(-score)} dB`;
}

export function rankingCsv(report: SensitivityReport, config: string | null): { header: string[]; rows: Cell[][] } {
  const metric = metricOf(report.ranking_metric);
  return {
    header: ["rank", "layer", "type", metric === "kl" ? "kl_mean" : "sqnr_db", "config"],
    rows: rankedLayers(report, config).map((r) => [
      r.rank,
      r.name,
      r.type,
      r.score === null ? null : metric === "kl" ? r.score : -r.score,
      config ?? "mean over configurations",
    ]),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Whole model, plans

export interface WholeModelRow {
  id: string;
  description: string;
  weightBits: number | null;
  klMean: number | null;
  klMax: number | null;
  top1: number | null;
  sqnr: number | null;
  sqnrInfinite: boolean;
}

export function wholeModelRows(report: SensitivityReport): WholeModelRow[] {
  return report.configs
    .filter((c) => c.id in report.whole_model)
    .map((c) => {
      const d = report.whole_model[c.id];
      return {
        id: c.id,
        description: describeConfig(c.config),
        weightBits: c.weight_bits,
        klMean: d?.kl_mean ?? null,
        klMax: d?.kl_max ?? null,
        top1: d?.top1_agreement ?? null,
        sqnr: d?.sqnr_db ?? null,
        sqnrInfinite: d?.sqnr_db_infinite === true,
      };
    });
}

export function wholeModelCsv(rows: WholeModelRow[]): { header: string[]; rows: Cell[][] } {
  return {
    header: ["config", "description", "weight_bits", "kl_mean", "kl_max", "top1_agreement", "sqnr_db"],
    rows: rows.map((r) => [
      r.id,
      r.description,
      r.weightBits,
      r.klMean,
      r.klMax,
      r.top1,
      r.sqnrInfinite ? "inf" : r.sqnr,
    ]),
  };
}

export interface PlanRow {
  averageBits: number;
  budgetBytes: number | null;
  sizeBytes: number | null;
  predictedKl: number | null;
  measuredKl: number | null;
  measuredTop1: number | null;
  measuredSqnr: number | null;
  /** Layer → (configuration id, bits), in the order given. */
  assignments: { layer: string; config: string; bits: number | null }[];
  error: string | null;
  notes: string[];
}

export function planRows(plans: readonly MixedPrecisionPlan[]): PlanRow[] {
  return plans.map((p) => {
    const measured = p.measurement?.measured;
    return {
      averageBits: p.average_bits,
      budgetBytes: finite(p.budget_bytes) ? p.budget_bytes : null,
      sizeBytes: finite(p.size_bytes) ? p.size_bytes : null,
      predictedKl: finite(p.predicted_kl) ? p.predicted_kl : null,
      measuredKl: measured?.kl_mean ?? null,
      measuredTop1: measured?.top1_agreement ?? null,
      measuredSqnr: measured?.sqnr_db ?? null,
      assignments: Object.entries(p.assignments ?? {}).map(([layer, config]) => ({
        layer,
        config,
        bits: p.bits?.[layer] ?? null,
      })),
      error: p.error ?? null,
      notes: [...(p.notes ?? []), ...(p.measurement?.notes ?? [])],
    };
  });
}

export function plansCsv(rows: PlanRow[]): { header: string[]; rows: Cell[][] } {
  return {
    header: [
      "average_bits",
      "budget_bytes",
      "size_bytes",
      "predicted_kl",
      "measured_kl",
      "measured_top1_agreement",
      "measured_sqnr_db",
      "assignments",
      "error",
    ],
    rows: rows.map((r) => [
      r.averageBits,
      r.budgetBytes,
      r.sizeBytes,
      r.predictedKl,
      r.measuredKl,
      r.measuredTop1,
      r.measuredSqnr,
      r.assignments.map((a) => `${a.layer}=${a.config}`).join(" "),
      r.error,
    ]),
  };
}

/** Predicted against measured KL of each plan (grouped bars, log axis). */
export function plansFigure(rows: PlanRow[]): { data: Data[]; layout: Partial<Layout> } {
  const ok = rows.filter((r) => r.error === null);
  const x = ok.map((r) => `${formatNumber(r.averageBits)} bits`);
  const bar = (name: string, y: (number | null)[], color: string): Data => ({
    type: "bar",
    name,
    x,
    y,
    marker: { color },
    hovertemplate: `${name}: %{y:.4g} nats<extra>%{x}</extra>`,
  });
  return {
    data: [
      bar(
        "predicted (Σ of layers alone)",
        ok.map((r) => r.predictedKl),
        "#9ecae9",
      ),
      bar(
        "measured (plan applied)",
        ok.map((r) => r.measuredKl),
        "#4c78a8",
      ),
    ],
    layout: {
      barmode: "group",
      bargap: 0.3,
      xaxis: { title: { text: "average weight bits" }, type: "category" },
      yaxis: { title: { text: "KL mean (nats)" }, rangemode: "tozero", exponentformat: "e" },
      legend: { orientation: "h", y: -0.3 },
      margin: { l: 60, r: 20, t: 10, b: 80 },
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Channel importance

/** Channels labelled by their index below the bars up to this many. */
export const MAX_LABELLED_CHANNELS = 32;

/** One bar per channel, most important first; the bar's label is the channel's index. */
export function channelFigure(ci: ChannelImportance): { data: Data[]; layout: Partial<Layout> } {
  const channels = ci.channels ?? [];
  const labelled = channels.length <= MAX_LABELLED_CHANNELS;
  const unit = ci.unit ?? ci.method;
  return {
    data: [
      {
        type: "bar",
        name: ci.method,
        x: channels.map((c) => c.rank),
        y: channels.map((c) => (finite(c.score) ? c.score : null)),
        customdata: channels.map((c) => c.channel),
        marker: { color: "#4c78a8" },
        hovertemplate: `channel %{customdata}<br>rank %{x}<br>${escapeHtml(unit)}: %{y:.4g}<extra></extra>`,
      },
    ],
    layout: {
      bargap: 0.15,
      xaxis: labelled
        ? {
            title: { text: "channel (most important first)" },
            tickvals: channels.map((c) => c.rank),
            ticktext: channels.map((c) => c.channel.toString()),
            tickangle: 0,
          }
        : { title: { text: "rank (0 = most important; hover for the channel)" } },
      yaxis: { title: { text: shortName(unit, 40) } },
      margin: { l: 60, r: 20, t: 10, b: 50 },
    },
  };
}

export function channelCsv(ci: ChannelImportance): { header: string[]; rows: Cell[][] } {
  return {
    header: ["layer", "method", "rank", "channel", "score"],
    rows: (ci.channels ?? []).map((c) => [ci.layer, ci.method, c.rank, c.channel, c.score]),
  };
}

/** The server returns at most this many channels of a layer (the most important ones). */
export const CHANNEL_LIMIT = 512;
