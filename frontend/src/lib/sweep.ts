// A sweep's points (GET /jobs/{id}/sweep/points) as rows for its page and the compare page: each point's
// objectives, runtime class and description, its golden (fp32) row and whether it is slower than it. The
// other sweep modules shape these rows: sweepBounds (the bounds a person sets and their sliders), sweepAxes
// (the two axes), sweepChart (the scatter with the frontier line, knee, slow and selected points, hover text)
// and sweepTable (sorting, the CSV and a point's latency rows).
import type { CompressionConfig, ExportManifest, SweepPoint, SweepPointDoc } from "../api/types";
import { formatBytes, formatNumber } from "./format";
import { describeConfig } from "./sensitivity";

export const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

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
  if (config.type === "search_step") {
    const returned = config.returned ? ", the plan the search returned" : "";
    return `search step k=${String(config.k ?? "?")}: ${String(config.k ?? "?")} most sensitive layer group(s) at ${config.high ?? "?"}, the rest at ${config.low ?? "?"}${returned}`;
  }
  return describeConfig(config);
}

/** Whether the point's stored export had channels physically removed (a channel-pruned point). */
export function channelsRemoved(point: SweepPoint): boolean {
  return point.export_manifest?.structured_pruning?.applied === true;
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
    // real kernel gives it a size or speed gain, so it is not listed as running in a real runtime - unless
    // channels were physically removed from its export (issue 33): a smaller file that really runs faster.
    runtime:
      executable === true && (realExport !== "simulated-float" || channelsRemoved(point))
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

/** "Slower than a bigger point" (set by the sweep merge: p50 more than 5 % above, and above the p90, of a point
 * whose exported file is larger, at the same batch size), as one line; "" when the point is not flagged. */
export function slowerThanBigger(row: SweepRow): string {
  const flag = row.point?.slower_than_bigger;
  if (!flag) return "";
  return `slower than ${flag.than} (a bigger file, ${formatBytes(flag.than_file_size_bytes)} vs ${formatBytes(flag.file_size_bytes)}) at batch ${String(flag.batch_size)}: ${formatNumber(flag.ratio, 3)} × its p50`;
}

/** The rows drawn at exactly the same place as `row` on these two objectives (itself included). */
export function samePlace(row: SweepRow, rows: readonly SweepRow[], x: string, y: string): SweepRow[] {
  const [vx, vy] = [value(row, x), value(row, y)];
  if (vx === null || vy === null) return [row];
  return rows.filter((r) => value(r, x) === vx && value(r, y) === vy);
}
