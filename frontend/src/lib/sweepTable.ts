// A sweep's points table and a point's details: sorting, the points CSV and the latency rows (and CSV) of one
// point.
import type { FrontierOut } from "../api/types";
import type { Cell } from "./csv";
import { objectiveInfo, ratioObjective } from "./sweepObjectives";
import { slowerThanGolden, value, type SweepRow } from "./sweep";
import { withinBounds, type BoundSpec } from "./sweepBounds";

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
