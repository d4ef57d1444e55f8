// A sensitivity job's results (GET /jobs/{id}/sensitivity, /all-but, /plans, /channels) shaped for its page:
// the layers × configurations heatmap (colour on a log scale of KL, or −SQNR when the output is not a
// classifier's), hover text, rankings, the whole-model row, mixed-precision plans, channel importance, CSV.
//
// A cell's score is "how much damage": KL(P‖Q) mean in nats for classifiers, else −SQNR in dB; higher means
// more sensitive. A KL of exactly 0 (outputs identical) cannot sit on a log axis: it is drawn one decade below
// the smallest positive KL, where the colour bar reads "0". A null is a cell that could not be computed: a gap
// (grey). In the matrix an SQNR of +∞ (identical outputs) also arrives as null; next to a KL of 0 it is shown
// as ∞.
//
// This module holds the scores and the texts of configurations and cells; sensitivityColor (the colour axis),
// sensitivityHeatmap (the figure and matrix CSV), sensitivityRanking, sensitivityPlans (whole model and
// mixed-precision plans) and sensitivityChannels (channel importance) shape the rest.
import type { SensitivityConfig, SensitivityLayer, SensitivityReport } from "../api/types";
import { formatNumber } from "./format";
import { isObject, numberAt } from "./json";

export type Metric = "kl" | "sqnr";
export type View = "only" | "all_but";
export type Grid = readonly (readonly (number | null | undefined)[])[];

/** "kl" for classifiers; "sqnr" (anything else) ranks by −SQNR. */
export const metricOf = (rankingMetric: string): Metric => (rankingMetric === "kl" ? "kl" : "sqnr");

/** The output-divergence metric of a report's KL / SQNR views: its ranking's, or, for a scan ranked by a task
 * metric (task.<name>, drawn by the task panel), KL for a classifier and SQNR for other outputs. */
export const proxyMetric = (report: { ranking_metric: string; output_kind: string }): Metric =>
  report.ranking_metric.startsWith("task.")
    ? report.output_kind === "classification"
      ? "kl"
      : "sqnr"
    : metricOf(report.ranking_metric);

export const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

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
    case "nm_sparsity":
      return `${String(numberAt(config, "n") ?? 2)}:${String(numberAt(config, "m") ?? 4)} sparsity (needs sparse kernels)`;
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

export function layersByName(report: SensitivityReport): Map<string, SensitivityLayer> {
  return new Map(report.layers.map((l) => [l.name, l]));
}

export function configsById(report: SensitivityReport): Map<string, SensitivityConfig> {
  return new Map(report.configs.map((c) => [c.id, c]));
}

/** Hover text of every cell (rows × columns): layer, its type, the configuration and the three numbers. */

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
