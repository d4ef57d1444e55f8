// The scatter of a sweep's points (Pareto frontier from GET /sweep-frontier): series by runtime class or by
// sweep, the frontier line, the knee and its label, the points slower than fp32, the selected point and the
// hover text.
import type { Data, Layout, PlotMarker } from "plotly.js";
import type { FrontierOut } from "../api/types";
import { escapeHtml } from "./sensitivity";
import { objectiveInfo, ratioObjective } from "./sweepObjectives";
import { samePlace, slowerThanBigger, slowerThanGolden, type SweepRow } from "./sweep";
import { withinBounds, type BoundSpec } from "./sweepBounds";
import type { Axis } from "./sweepAxes";

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

const SEARCH_COLOR = "#54a24b";

/**
 * Points in series by runtime: executable in a real runtime (filled circles), simulated only (open diamonds); the
 * steps of an accuracy-aware search apart (open squares), so the steps read as a path toward the returned plan.
 */
export function runtimeSeries(rows: readonly SweepRow[]): Series[] {
  const steps = rows.filter((r) => r.config.type === "search_step");
  const others = rows.filter((r) => r.config.type !== "search_step");
  const real = others.filter((r) => r.runtime !== "simulated");
  const simulated = others.filter((r) => r.runtime === "simulated");
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
  if (steps.length)
    series.push({ key: "search", name: "search steps", color: SEARCH_COLOR, symbol: "square-open", rows: steps });
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
  if (row.runtime === "real" && row.realExport === "simulated-float")
    return "runs in ONNX Runtime: float32 with the pruned channels removed";
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
    slowerThanBigger(row) ? `⚠ ${escapeHtml(slowerThanBigger(row))}` : "",
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
