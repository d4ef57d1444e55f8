// A sweep's points (GET /jobs/{id}/sweep/points) and Pareto frontier (GET /sweep-frontier) shaped for its
// page and the compare page: rows, the bounds a person sets, the two axes (log where the values span decades;
// a KL of exactly 0 — the golden model — sits at a "0" tick one decade below the smallest positive value),
// the scatter with the frontier line, the knee, the points slower than fp32 and the selected point, the
// hover text, the table's sorting and the CSV.
import type { Data, Layout, LayoutAxis, PlotMarker } from "plotly.js";
import type { CompressionConfig, ExportManifest, FrontierOut, SweepPoint, SweepPointDoc } from "../api/types";
import type { Cell } from "./csv";
import { formatCount, formatNumber } from "./format";
import { describeConfig, escapeHtml } from "./sensitivity";
import { axisLabel, objectiveInfo, ratioObjective, type Direction, type ObjectiveInfo } from "./sweepObjectives";

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export const GOLDEN_LABEL = "fp32";

// ---------------------------------------------------------------------------------------------------------
// Rows

export type RuntimeClass = "real" | "simulated" | "unknown";

export interface SweepRow {
  /** "<job id>:<index>": the id the frontier uses. */
  id: string;
  jobId: string;
  index: number;
  label: string;
  description: string;
  config: CompressionConfig;
  objectives: Record<string, number | null>;
  /** Runs in a real runtime (an int8 / fp16 / float ONNX file), simulated only, or not known (no details). */
  runtime: RuntimeClass;
  realExport: string | null;
  runtimeNote: string | null;
  exportAvailable: boolean;
  /** The point's whole document (with ?details=true). */
  point: SweepPointDoc | null;
  manifest: ExportManifest | null;
}

/** One line a person reads: "the golden model", "mixed precision at 5 average bits (conv1 8, …)", "4-bit …". */
export function describePoint(label: string, config: CompressionConfig): string {
  if (label === GOLDEN_LABEL && config.type === "none") return "the golden model, uncompressed";
  if (config.type === "mixed_precision") {
    const bits = config.average_bits ?? null;
    const perLayer = typeof config.bits === "object" ? config.bits : null;
    const layers = perLayer
      ? Object.entries(perLayer)
          .map(([layer, b]) => `${layer} ${String(b)}`)
          .join(", ")
      : "";
    return `mixed precision at ${formatNumber(bits)} average bits${layers ? ` (${layers})` : ""}`;
  }
  return describeConfig(config);
}

export function toRow(point: SweepPoint): SweepRow {
  const doc = point.point ?? null;
  const executable = doc?.runtime?.executable;
  const realExport = doc?.runtime?.real_export ?? null;
  return {
    id: point.id,
    jobId: point.job_id,
    index: point.index,
    label: point.label,
    description: describePoint(point.label, point.config),
    config: point.config,
    objectives: point.objectives,
    // A pruned or low-rank point runs only as the simulation's dense float32 graph ("simulated-float"): no
    // real kernel gives it a size or speed gain, so it is not listed as running in a real runtime.
    runtime:
      executable === true && realExport !== "simulated-float"
        ? "real"
        : executable === false || executable === true
          ? "simulated"
          : "unknown",
    realExport,
    runtimeNote: doc?.runtime?.runtime_note ?? null,
    exportAvailable: point.export_available,
    point: doc,
    manifest: point.export_manifest ?? null,
  };
}

export const value = (row: SweepRow, name: string): number | null => {
  const v = row.objectives[name];
  return finite(v) ? v : null;
};

/** The golden (fp32) point of the row's own sweep among `rows`. */
export function goldenOf(row: SweepRow, rows: readonly SweepRow[]): SweepRow | undefined {
  return rows.find((r) => r.jobId === row.jobId && r.label === GOLDEN_LABEL);
}

/** Slower than the golden model at this batch size beyond the measured spread: its p50 exceeds fp32's p50 by
 * more than either one's p90 − p50. A 1.01× ratio is timing noise, not a slowdown (issue 16). False when the
 * sweep's fp32 point or a percentile is missing. */
export function slowerThanGolden(row: SweepRow, batch: number | null, rows: readonly SweepRow[]): boolean {
  if (batch === null || row.label === GOLDEN_LABEL) return false;
  const golden = goldenOf(row, rows);
  if (!golden) return false;
  const b = batch.toString();
  const [p50, p90] = [value(row, `latency_p50_ms_b${b}`), value(row, `latency_p90_ms_b${b}`)];
  const [g50, g90] = [value(golden, `latency_p50_ms_b${b}`), value(golden, `latency_p90_ms_b${b}`)];
  if (p50 === null || p90 === null || g50 === null || g90 === null) return false;
  return p50 - g50 > Math.max(p90 - p50, g90 - g50, 0);
}

/** The rows drawn at exactly the same place as `row` on these two objectives (itself included). */
export function samePlace(row: SweepRow, rows: readonly SweepRow[], x: string, y: string): SweepRow[] {
  const [vx, vy] = [value(row, x), value(row, y)];
  if (vx === null || vy === null) return [row];
  return rows.filter((r) => value(r, x) === vx && value(r, y) === vy);
}

// ---------------------------------------------------------------------------------------------------------
// Bounds

/** The constraints a person sets on the page; null = no bound. */
export interface Bounds {
  maxKl: number | null;
  minTop1: number | null;
  maxSize: number | null;
  /** On the p50 latency at the page's latency batch size. */
  maxLatency: number | null;
}

export const NO_BOUNDS: Bounds = { maxKl: null, minTop1: null, maxSize: null, maxLatency: null };

export interface BoundSpec {
  objective: string;
  atMost: number | null;
  atLeast: number | null;
}

export function boundSpecs(bounds: Bounds, latencyBatch: number | null): BoundSpec[] {
  const specs: BoundSpec[] = [];
  if (bounds.maxKl !== null) specs.push({ objective: "kl_mean", atMost: bounds.maxKl, atLeast: null });
  if (bounds.minTop1 !== null) specs.push({ objective: "top1_agreement", atMost: null, atLeast: bounds.minTop1 });
  if (bounds.maxSize !== null) specs.push({ objective: "size_bytes", atMost: bounds.maxSize, atLeast: null });
  if (bounds.maxLatency !== null && latencyBatch !== null)
    specs.push({ objective: `latency_p50_ms_b${latencyBatch.toString()}`, atMost: bounds.maxLatency, atLeast: null });
  return specs;
}

/** The API's bound parameters: "kl_mean<=0.01", "top1_agreement>=0.99". */
export function boundParams(specs: readonly BoundSpec[]): string[] {
  return specs.flatMap((s) => [
    ...(s.atMost !== null ? [`${s.objective}<=${String(s.atMost)}`] : []),
    ...(s.atLeast !== null ? [`${s.objective}>=${String(s.atLeast)}`] : []),
  ]);
}

/** Inclusive, as the API's; a point without a number for a bounded objective is outside (the API excludes it). */
export function withinBounds(objectives: Record<string, number | null | undefined>, specs: readonly BoundSpec[]) {
  return specs.every((s) => {
    const v = objectives[s.objective];
    if (!finite(v)) return false;
    return (s.atMost === null || v <= s.atMost) && (s.atLeast === null || v >= s.atLeast);
  });
}

/** "kl_mean:min" pairs for the API, the x axis first (the frontier comes ordered along it). */
export const objectiveParams = (axes: readonly { name: string; direction: Direction }[]): string[] =>
  axes.map((a) => `${a.name}:${a.direction}`);

// ---------------------------------------------------------------------------------------------------------
// Axes

/** A log axis needs values that are never negative and at least one positive (zeros sit at "0"). */
export function canLog(values: readonly (number | null | undefined)[]): boolean {
  const numbers = values.filter(finite);
  return numbers.length > 0 && numbers.every((v) => v >= 0) && numbers.some((v) => v > 0);
}

/** "2 KiB", "512 B", "1.5 MiB": short binary sizes for ticks. */
export function shortBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = bytes;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${Number(size.toPrecision(3)).toString()} ${units[unit] ?? ""}`;
}

function thin(values: number[], max: number): number[] {
  const step = Math.max(1, Math.ceil(values.length / max));
  return values.filter((_, i) => i % step === 0);
}

/** Ticks (in data units) inside [10^lo, 10^hi]: 1-2-5 steps over a narrow range, decades or powers of 2. */
export function logTicks(lo: number, hi: number, binary = false, max = 7): number[] {
  if (binary) {
    const out: number[] = [];
    for (let k = Math.ceil(lo / Math.log10(2) - 1e-9); k <= Math.floor(hi / Math.log10(2) + 1e-9); k += 1)
      out.push(2 ** k);
    return thin(out, max);
  }
  const out: number[] = [];
  const steps = hi - lo <= 1.5 ? [1, 2, 5] : [1];
  for (let d = Math.floor(lo); d <= Math.ceil(hi); d += 1)
    for (const m of steps) {
      const v = Number((m * 10 ** d).toPrecision(12));
      const e = Math.log10(v);
      if (e >= lo - 1e-9 && e <= hi + 1e-9) out.push(v);
    }
  return thin(out, max);
}

export interface Axis {
  name: string;
  info: ObjectiveInfo;
  direction: Direction;
  log: boolean;
  /** Where a value is drawn (data units); null: not drawable. */
  map: (v: number | null | undefined) => number | null;
  /** Values at exactly 0 drawn at the "0" tick of a log axis. */
  zeros: number;
  layout: Partial<LayoutAxis>;
}

function better(side: "x" | "y", direction: Direction): string {
  if (side === "x") return direction === "min" ? "← better" : "better →";
  return direction === "min" ? "↓ better" : "↑ better";
}

/**
 * One axis of the scatter. `log`: wanted (null: the objective's default); granted only when the values allow it.
 * On a log axis zeros are drawn one decade (bytes: 8×) below the smallest positive value, at a tick "0".
 */
export function buildAxis(
  name: string,
  direction: Direction,
  log: boolean | null,
  values: readonly (number | null | undefined)[],
  side: "x" | "y",
): Axis {
  const info = objectiveInfo(name);
  const useLog = (log ?? info.log) && canLog(values);
  const title = `${axisLabel(name)}${useLog ? ", log scale" : ""}   ${better(side, direction)}`;
  if (!useLog) {
    return {
      name,
      info,
      direction,
      log: false,
      map: (v) => (finite(v) ? v : null),
      zeros: 0,
      layout: {
        type: "linear",
        title: { text: title },
        autorange: true,
        zeroline: false,
        ...(info.percent ? { tickformat: ".1~%" } : {}),
      },
    };
  }
  const binary = info.unit === "bytes";
  const positives = values.filter((v): v is number => finite(v) && v > 0);
  const zeros = values.filter((v) => finite(v) && v <= 0).length;
  const lo = Math.log10(Math.min(...positives));
  const hi = Math.log10(Math.max(...positives));
  const floorExp = binary ? (Math.floor(lo / Math.log10(2)) - 3) * Math.log10(2) : Math.floor(lo + 1e-9) - 1;
  const floor = zeros > 0 ? 10 ** floorExp : null;
  const bottom = floor === null ? lo : floorExp;
  const pad = Math.max(0.1, 0.08 * (hi - bottom));
  const range: [number, number] = [bottom - pad, hi + pad];
  let ticks = logTicks(range[0], range[1], binary);
  if (floor !== null) ticks = ticks.filter((t) => Math.log10(t) > floorExp + 0.3);
  const count = ["params_kept", "macs", "bops"].includes(name);
  const text = (t: number) =>
    binary ? shortBytes(t) : count ? formatCount(t) : formatNumber(Number(t.toPrecision(3)));
  const tickvals = floor === null ? ticks : [floor, ...ticks];
  const ticktext = floor === null ? ticks.map(text) : ["0", ...ticks.map(text)];
  return {
    name,
    info,
    direction,
    log: true,
    map: (v) => (!finite(v) ? null : v > 0 ? v : floor),
    zeros,
    layout: {
      type: "log",
      title: { text: title },
      range,
      tickmode: "array",
      tickvals,
      ticktext,
      zeroline: false,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// The scatter

export type MarkerSymbol = NonNullable<PlotMarker["symbol"]>;

/** A set of points drawn alike: a runtime class (one sweep) or a sweep (the compare page). */
export interface Series {
  key: string;
  name: string;
  color: string;
  symbol: MarkerSymbol;
  rows: SweepRow[];
}

export const PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#72b7b2", "#9d755d", "#eeca3b", "#e45756"];
export const REAL_COLOR = "#4c78a8";
export const SIMULATED_COLOR = "#8c6d31";
const FRONTIER_COLOR = "#d62728";
const SLOW_COLOR = "#e8590c";
const KNEE_COLOR = "#f2b400";
const SELECTED_COLOR = "#1d4ed8";

/** Points in two series by runtime: executable in a real runtime (filled circles), simulated only (open diamonds). */
export function runtimeSeries(rows: readonly SweepRow[]): Series[] {
  const real = rows.filter((r) => r.runtime !== "simulated");
  const simulated = rows.filter((r) => r.runtime === "simulated");
  const series: Series[] = [];
  if (real.length)
    series.push({
      key: "real",
      name: real.every((r) => r.runtime === "unknown") ? "points" : "runs in a real runtime",
      color: REAL_COLOR,
      symbol: "circle",
      rows: real,
    });
  if (simulated.length)
    series.push({
      key: "simulated",
      name: "simulated only",
      color: SIMULATED_COLOR,
      symbol: "diamond-open",
      rows: simulated,
    });
  return series;
}

/** One series per sweep (compare page), in the given order, coloured from the palette. */
export function sweepSeries(rows: readonly SweepRow[], sweeps: readonly { id: string; name: string }[]): Series[] {
  return sweeps
    .map((s, k) => ({
      key: s.id,
      name: s.name,
      color: PALETTE[k % PALETTE.length] ?? REAL_COLOR,
      symbol: "circle",
      rows: rows.filter((r) => r.jobId === s.id),
    }))
    .filter((s) => s.rows.length > 0);
}

function runtimeLine(row: SweepRow): string {
  if (row.runtime === "real") return `runs in ONNX Runtime: ${escapeHtml(row.realExport ?? "?")}`;
  if (row.runtime === "simulated" && row.realExport === "simulated-float")
    return "runs only as a dense float32 graph (simulated-float): no real kernel";
  if (row.runtime === "simulated") return "simulated only (no runtime executes it)";
  return "";
}

/** The hover text of a point: its configuration, the two axes' numbers first, then the usual ones. */
export function hoverText(
  row: SweepRow,
  axes: readonly string[],
  slowBatch: number | null,
  sweepName?: string,
  rows: readonly SweepRow[] = [row],
): string {
  const [ax = "", ay = ""] = axes;
  const others = samePlace(row, rows, ax, ay).length - 1;
  const standard = [
    "kl_mean",
    "top1_agreement",
    "sqnr_db",
    "accuracy_drop_pp",
    "size_bytes",
    "compression_ratio",
    "bops",
  ];
  if (slowBatch !== null) standard.push(`latency_p50_ms_b${slowBatch.toString()}`, ratioObjective(slowBatch));
  const names = [...axes, ...standard.filter((n) => !axes.includes(n))].filter((n) => n in row.objectives);
  const lines = [
    `<b>${escapeHtml(row.label)}</b>${sweepName ? ` · ${escapeHtml(sweepName)}` : ""}`,
    `<i>${escapeHtml(row.description)}</i>`,
    ...names.map((n, i) => {
      const text = `${objectiveInfo(n).label}: ${objectiveInfo(n).format(row.objectives[n])}`;
      return i < axes.length ? `<b>${text}</b>` : text;
    }),
    runtimeLine(row),
    slowerThanGolden(row, slowBatch, rows) ? `⚠ slower than fp32 at batch ${String(slowBatch)}` : "",
    others > 0
      ? `+${others.toString()} other point${others === 1 ? "" : "s"} at this position: click for the list`
      : "",
  ];
  return lines.filter(Boolean).join("<br>");
}

export interface ParetoInput {
  series: readonly Series[];
  x: Axis;
  y: Axis;
  frontier: FrontierOut | null;
  bounds: readonly BoundSpec[];
  selected: string | null;
  /** Flag points slower than fp32 at this batch size (null: no latency). */
  slowBatch: number | null;
  /** Compare page: the sweep's name in the hover. */
  sweepNames?: ReadonlyMap<string, string>;
}

export interface ParetoFigure {
  data: Data[];
  layout: Partial<Layout>;
  /** Points on the chart. */
  drawn: number;
  /** Points without a number for an axis (not drawn). */
  undrawn: SweepRow[];
  /** Points outside the bounds (faded). */
  outside: number;
  slow: SweepRow[];
  /** The frontier points, along x, as drawn. */
  line: { x: number[]; y: number[]; ids: string[] };
}

/** The frontier as a line through its points, in x order (the API orders along the first objective). */
export function frontierLine(frontier: FrontierOut | null, x: Axis, y: Axis): ParetoFigure["line"] {
  const pts = (frontier?.frontier ?? [])
    .map((p) => ({ id: p.id, x: x.map(p.objectives[x.name]), y: y.map(p.objectives[y.name]) }))
    .filter((p): p is { id: string; x: number; y: number } => p.x !== null && p.y !== null)
    .sort((a, b) => a.x - b.x || a.y - b.y);
  return { x: pts.map((p) => p.x), y: pts.map((p) => p.y), ids: pts.map((p) => p.id) };
}

/**
 * Which way (−1 or +1 along the axis' values) the knee's label goes: towards the better end, where no point
 * lies (nothing beats a frontier point on both axes), unless the knee sits near that end of the chart.
 */
export function labelSide(axis: Axis, row: SweepRow, rows: readonly SweepRow[], better: -1 | 1): -1 | 1 {
  const at = (r: SweepRow) => {
    const v = axis.map(r.objectives[axis.name]);
    return v === null ? null : axis.log ? Math.log10(v) : v;
  };
  const values = rows.map(at).filter((v): v is number => v !== null);
  const v = at(row);
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (v === null || !(hi > lo)) return better;
  const fraction = (v - lo) / (hi - lo);
  if (better === -1 && fraction < 0.3) return 1;
  if (better === 1 && fraction > 0.7) return -1;
  return better;
}

/** Where an annotation goes on an axis: log axes take log10 of the value. */
function annotationAt(axis: Axis, row: SweepRow): number {
  const v = axis.map(row.objectives[axis.name]) ?? 0;
  return axis.log ? Math.log10(v) : v;
}

/** The scatter of every point, the frontier line, the knee, the points slower than fp32, the selected one. */
export function paretoFigure(input: ParetoInput): ParetoFigure {
  const { x, y, frontier, bounds, selected, slowBatch } = input;
  const all = input.series.flatMap((s) => s.rows);
  const drawable = (r: SweepRow) => x.map(r.objectives[x.name]) !== null && y.map(r.objectives[y.name]) !== null;
  const xy = (rows: readonly SweepRow[]) => ({
    x: rows.map((r) => x.map(r.objectives[x.name])),
    y: rows.map((r) => y.map(r.objectives[y.name])),
  });
  const data: Data[] = [];
  const line = frontierLine(frontier, x, y);
  if (line.x.length > 0)
    data.push({
      type: "scatter",
      mode: "lines",
      name: "Pareto frontier",
      uid: "frontier",
      x: line.x,
      y: line.y,
      line: { color: FRONTIER_COLOR, width: 2, dash: "solid" },
      hoverinfo: "skip",
    });
  let outside = 0;
  for (const s of input.series) {
    const rows = s.rows.filter(drawable);
    const inside = rows.filter((r) => withinBounds(r.objectives, bounds));
    const faded = rows.filter((r) => !withinBounds(r.objectives, bounds));
    outside += faded.length;
    const open = String(s.symbol).endsWith("-open");
    // Points outside the bounds: a second, faded trace of the same legend entry.
    for (const [part, suffix, opacity] of [
      [inside, "", 1],
      [faded, "-out", 0.25],
    ] as const) {
      if (part.length === 0) continue;
      data.push({
        type: "scatter",
        mode: "markers",
        name: s.name,
        uid: `points-${s.key}${suffix}`,
        legendgroup: s.key,
        showlegend: suffix === "" || inside.length === 0,
        ...xy(part),
        customdata: part.map((r) => r.id),
        text: part.map((r) => hoverText(r, [x.name, y.name], slowBatch, input.sweepNames?.get(r.jobId), all)),
        hovertemplate: "%{text}<extra></extra>",
        marker: {
          symbol: s.symbol,
          size: open ? 12 : 11,
          color: s.color,
          opacity,
          line: open ? { color: s.color, width: 2 } : { color: "white", width: 1 },
        },
      });
    }
  }
  const knee = frontier?.knee ? all.find((r) => r.id === frontier.knee && drawable(r)) : undefined;
  if (knee)
    data.push({
      type: "scatter",
      mode: "markers",
      name: "knee (best trade-off)",
      uid: "knee",
      ...xy([knee]),
      marker: { symbol: "star", size: 22, color: KNEE_COLOR, line: { color: "#5c4400", width: 1 } },
      hoverinfo: "skip",
    });
  const slow = all.filter((r) => drawable(r) && slowerThanGolden(r, slowBatch, all));
  if (slow.length > 0)
    data.push({
      type: "scatter",
      mode: "markers",
      name: `slower than fp32 (batch ${String(slowBatch)})`,
      uid: "slow",
      ...xy(slow),
      marker: { symbol: "circle-open", size: 20, color: SLOW_COLOR, line: { color: SLOW_COLOR, width: 2 } },
      hoverinfo: "skip",
    });
  const chosen = selected ? all.find((r) => r.id === selected && drawable(r)) : undefined;
  if (chosen)
    data.push({
      type: "scatter",
      mode: "markers",
      name: "selected",
      uid: "selected",
      ...xy([chosen]),
      marker: { symbol: "circle-open", size: 28, color: SELECTED_COLOR, line: { color: SELECTED_COLOR, width: 3 } },
      hoverinfo: "skip",
      showlegend: false,
    });
  const drawnRows = all.filter(drawable);
  const layout: Partial<Layout> = {
    margin: { l: 80, r: 20, t: 36, b: 56 },
    xaxis: x.layout,
    yaxis: y.layout,
    hovermode: "closest",
    hoverlabel: { align: "left" },
    legend: { orientation: "h", x: 0, y: 1.01, yanchor: "bottom" },
    uirevision: `${x.name}|${y.name}|${String(x.log)}|${String(y.log)}`,
    annotations: knee
      ? [
          {
            x: annotationAt(x, knee),
            y: annotationAt(y, knee),
            text: `knee: ${escapeHtml(knee.label)}`,
            showarrow: true,
            arrowhead: 0,
            ax: labelSide(x, knee, drawnRows, x.direction === "min" ? -1 : 1) * 50,
            ay: labelSide(y, knee, drawnRows, y.direction === "min" ? -1 : 1) * -36,
            font: { size: 11, color: "#5c4400" },
            bgcolor: "rgba(255,255,255,0.85)",
          },
        ]
      : [],
  };
  return {
    data,
    layout,
    drawn: all.filter(drawable).length,
    undrawn: all.filter((r) => !drawable(r)),
    outside,
    slow,
    line,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Table and CSV

export type SortOrder = "asc" | "desc";

/** Rows sorted by "index", "label" or an objective; rows without a number go last either way. */
export function sortRows(rows: readonly SweepRow[], key: string, order: SortOrder): SweepRow[] {
  const sign = order === "asc" ? 1 : -1;
  return [...rows].sort((a, b) => {
    if (key === "label") return sign * a.label.localeCompare(b.label) || a.index - b.index;
    const va = key === "index" ? a.index : value(a, key);
    const vb = key === "index" ? b.index : value(b, key);
    if (va === null && vb === null) return a.jobId.localeCompare(b.jobId) || a.index - b.index;
    if (va === null) return 1;
    if (vb === null) return -1;
    return sign * (va - vb) || a.jobId.localeCompare(b.jobId) || a.index - b.index;
  });
}

/** The order a column sorts in on its first click: best first. */
export const firstOrder = (key: string): SortOrder =>
  key === "index" || key === "label" ? "asc" : objectiveInfo(key).direction === "min" ? "asc" : "desc";

export interface PointsCsvOptions {
  objectives: readonly string[];
  frontier: FrontierOut | null;
  bounds: readonly BoundSpec[];
  slowBatch: number | null;
  sweepNames?: ReadonlyMap<string, string>;
}

/** Every point with its objectives, whether it is on the frontier / the knee / inside the bounds. */
export function pointsCsv(rows: readonly SweepRow[], options: PointsCsvOptions): { header: string[]; rows: Cell[][] } {
  const onFrontier = new Set(options.frontier?.frontier.map((p) => p.id) ?? []);
  const header = [
    "job_id",
    ...(options.sweepNames ? ["sweep"] : []),
    "index",
    "label",
    "description",
    "runtime",
    "real_export",
    "export_available",
    "on_frontier",
    "knee",
    "within_bounds",
    "slower_than_fp32",
    ...options.objectives,
  ];
  return {
    header,
    rows: rows.map((r) => [
      r.jobId,
      ...(options.sweepNames ? [options.sweepNames.get(r.jobId) ?? ""] : []),
      r.index,
      r.label,
      r.description,
      r.runtime,
      r.realExport,
      r.exportAvailable,
      onFrontier.has(r.id),
      options.frontier?.knee === r.id,
      withinBounds(r.objectives, options.bounds),
      slowerThanGolden(r, options.slowBatch, rows),
      ...options.objectives.map((n) => r.objectives[n] ?? null),
    ]),
  };
}

// ---------------------------------------------------------------------------------------------------------
// A point's details

export interface LatencyRow {
  batch: number;
  p50: number | null;
  p90: number | null;
  mean: number | null;
  min: number | null;
  max: number | null;
  perSample: number | null;
  /** p50 over fp32's p50 at this batch size. */
  ratio: number | null;
}

export function latencyRows(row: SweepRow): LatencyRow[] {
  return (row.point?.latency?.batches ?? []).map((b) => {
    const batch = b.batch_size;
    return {
      batch,
      p50: b.p50_ms,
      p90: b.p90_ms,
      mean: b.mean_ms,
      min: b.min_ms,
      max: b.max_ms,
      perSample: b.per_sample_p50_ms,
      ratio: value(row, ratioObjective(batch)),
    };
  });
}

export function latencyCsv(row: SweepRow): { header: string[]; rows: Cell[][] } {
  return {
    header: [
      "label",
      "batch_size",
      "p50_ms",
      "p90_ms",
      "mean_ms",
      "min_ms",
      "max_ms",
      "per_sample_p50_ms",
      "ratio_to_fp32",
    ],
    rows: latencyRows(row).map((l) => [row.label, l.batch, l.p50, l.p90, l.mean, l.min, l.max, l.perSample, l.ratio]),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Bound sliders

export interface SliderScale {
  min: number;
  max: number;
  step: number;
  /** A slider position → a rounded bound value. */
  toValue: (position: number) => number;
  toPosition: (value: number) => number;
}

const round = (v: number, digits = 3) => Number(v.toPrecision(digits));

/**
 * A slider over the values a bound can usefully take: log10 steps over the positive values (KL, size), or
 * 200 linear steps between the smallest and the largest value. Null when there is nothing to slide over.
 */
export function sliderScale(values: readonly (number | null | undefined)[], log: boolean): SliderScale | null {
  const numbers = values.filter(finite);
  if (numbers.length === 0) return null;
  if (log) {
    const positives = numbers.filter((v) => v > 0);
    if (positives.length === 0) return null;
    const lo = Math.floor(Math.log10(Math.min(...positives)) * 10) / 10;
    let hi = Math.ceil(Math.log10(Math.max(...positives)) * 10) / 10;
    if (hi <= lo) hi = lo + 1;
    return {
      min: lo,
      max: hi,
      step: 0.01,
      toValue: (p) => round(10 ** p),
      toPosition: (v) => (v > 0 ? Math.min(hi, Math.max(lo, Math.log10(v))) : lo),
    };
  }
  let lo = Math.min(...numbers);
  let hi = Math.max(...numbers);
  if (hi - lo < 1e-12) {
    const pad = Math.abs(lo) * 0.1 || 1;
    lo -= pad;
    hi += pad;
  }
  const step = (hi - lo) / 200;
  return {
    min: lo,
    max: hi,
    step,
    toValue: (p) => round(p, 4),
    toPosition: (v) => Math.min(hi, Math.max(lo, v)),
  };
}
