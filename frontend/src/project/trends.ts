// Which headline metric a trend plots, which way is better, and when the latest run counts as worse.
import type { TrendPoint } from "./trendQueries";

export type TrendMetric =
  | "top1_match"
  | "topk_agreement"
  | "kl_mean_nats"
  | "js_mean_nats"
  | "cosine_mean"
  | "sqnr_db"
  | "top1_accuracy_drop_pp"
  | "ece_shift";

export interface MetricSpec {
  label: string;
  higherIsBetter: boolean;
  /** A change in the bad direction smaller than this is noise: two runs of the same model agree to within it. */
  threshold: number;
  /** Whether `threshold` is relative to the previous value (divergences span decades) or absolute. */
  relative: boolean;
}

export const TREND_METRICS: Record<TrendMetric, MetricSpec> = {
  top1_match: { label: "Top-1 agreement", higherIsBetter: true, threshold: 0.005, relative: false },
  topk_agreement: { label: "Top-k agreement", higherIsBetter: true, threshold: 0.005, relative: false },
  kl_mean_nats: { label: "Mean KL (nats)", higherIsBetter: false, threshold: 0.1, relative: true },
  js_mean_nats: { label: "Mean JS (nats)", higherIsBetter: false, threshold: 0.1, relative: true },
  cosine_mean: { label: "Mean cosine", higherIsBetter: true, threshold: 0.001, relative: false },
  sqnr_db: { label: "SQNR (dB)", higherIsBetter: true, threshold: 1, relative: false },
  top1_accuracy_drop_pp: { label: "Top-1 accuracy drop (pp)", higherIsBetter: false, threshold: 0.5, relative: false },
  ece_shift: { label: "ECE shift", higherIsBetter: false, threshold: 0.01, relative: false },
};

export function metricValue(point: TrendPoint, metric: TrendMetric): number | null {
  const value = point.headline[metric];
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** How much worse `latest` is than `previous` (positive: worse), in the metric's own units. */
export function worsening(previous: number, latest: number, spec: MetricSpec): number {
  return spec.higherIsBetter ? previous - latest : latest - previous;
}

/** True when the latest run with a value is worse than the run before it by more than the metric's threshold. */
export function latestIsWorse(points: TrendPoint[], metric: TrendMetric): boolean {
  const values = points.map((p) => metricValue(p, metric)).filter((v): v is number => v !== null);
  if (values.length < 2) return false;
  const [previous, latest] = values.slice(-2) as [number, number];
  const spec = TREND_METRICS[metric];
  const limit = spec.relative ? spec.threshold * Math.abs(previous) : spec.threshold;
  return worsening(previous, latest, spec) > limit;
}

/** A point's label: the compressed model, its tags and the job's tags. */
export function pointLabel(point: TrendPoint): string {
  const tags = [...point.compressed.tags, ...point.job_tags];
  const name = point.compressed.name ?? "(deleted model)";
  return tags.length > 0 ? `${name} [${tags.join(", ")}]` : name;
}
