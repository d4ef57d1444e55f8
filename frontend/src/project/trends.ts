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
  /** The fallback where a run has no standard error for the metric (JS, SQNR and the ECE shift have no
   * per-sample column; jobs from before the per-sample table): a judgement, not a measured spread. */
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

/** Multiples of the difference's standard error beyond which the latest run counts as worse (~2.3 % of
 * pairs of runs of the same model would be flagged by chance, one-sided, for normal means). */
export const NOISE_MULTIPLE = 2;

/** The standard error the API serves for this metric on this run, or null (no spread available). */
export function standardError(point: TrendPoint, metric: TrendMetric): number | null {
  const se = (point.standard_errors as Partial<Record<TrendMetric, number | null>>)[metric];
  return typeof se === "number" && Number.isFinite(se) && se >= 0 ? se : null;
}

export interface Verdict {
  worse: boolean;
  /** "noise": the limit is NOISE_MULTIPLE·√(se_prev² + se_last²); "fixed": the metric's fixed threshold
   * (a run lacks a standard error); "none": fewer than two runs with a value. */
  basis: "noise" | "fixed" | "none";
  /** How much worse (in the metric's units) the latest run may be before it is flagged. */
  limit: number | null;
}

/** Whether the latest run with a value is worse than the run before it beyond the noise of the two. */
export function latestVerdict(points: TrendPoint[], metric: TrendMetric): Verdict {
  const withValue = points.filter((p) => metricValue(p, metric) !== null);
  if (withValue.length < 2) return { worse: false, basis: "none", limit: null };
  const [prev, last] = withValue.slice(-2) as [TrendPoint, TrendPoint];
  const [previous, latest] = [metricValue(prev, metric) ?? 0, metricValue(last, metric) ?? 0];
  const spec = TREND_METRICS[metric];
  const [sePrev, seLast] = [standardError(prev, metric), standardError(last, metric)];
  const noise = sePrev !== null && seLast !== null;
  const limit = noise
    ? NOISE_MULTIPLE * Math.hypot(sePrev, seLast)
    : spec.relative
      ? spec.threshold * Math.abs(previous)
      : spec.threshold;
  return { worse: worsening(previous, latest, spec) > limit, basis: noise ? "noise" : "fixed", limit };
}

/** True when the latest run with a value is worse than the run before it (see latestVerdict). */
export function latestIsWorse(points: TrendPoint[], metric: TrendMetric): boolean {
  return latestVerdict(points, metric).worse;
}

/** A point's label: the compressed model, its tags and the job's tags. */
export function pointLabel(point: TrendPoint): string {
  const tags = [...point.compressed.tags, ...point.job_tags];
  const name = point.compressed.name ?? "(deleted model)";
  return tags.length > 0 ? `${name} [${tags.join(", ")}]` : name;
}
