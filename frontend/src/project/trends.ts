// Which headline metric a trend plots, which way is better, and when the latest run counts as worse.
import { taskColumns, taskValue } from "../lib/taskHeadline";
import type { TrendPoint } from "./trendQueries";

/** A task metric of the runs' headlines, named as sweeps and budgets name it ("task.map50_drop"). */
export type TaskTrendMetric = `task.${string}`;
export type TrendMetric = BuiltinTrendMetric | TaskTrendMetric;

export type BuiltinTrendMetric =
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
  /** Whether the API serves a standard error for it (backend/services/trend_spread.py SE_METRICS). */
  spread: boolean;
  /** A share in [0, 1] (agreement, cosine): its axis never leaves 0..1, where Plotly's autorange around runs
   * that all equal 1 drew 0..2. */
  fraction?: boolean;
}

export const TREND_METRICS: Record<BuiltinTrendMetric, MetricSpec> = {
  top1_match: {
    label: "Top-1 agreement",
    higherIsBetter: true,
    threshold: 0.005,
    relative: false,
    spread: true,
    fraction: true,
  },
  topk_agreement: {
    label: "Top-k agreement",
    higherIsBetter: true,
    threshold: 0.005,
    relative: false,
    spread: true,
    fraction: true,
  },
  kl_mean_nats: { label: "Mean KL (nats)", higherIsBetter: false, threshold: 0.1, relative: true, spread: true },
  js_mean_nats: { label: "Mean JS (nats)", higherIsBetter: false, threshold: 0.1, relative: true, spread: false },
  cosine_mean: { label: "Mean cosine", higherIsBetter: true, threshold: 0.001, relative: false, spread: true },
  sqnr_db: { label: "SQNR (dB)", higherIsBetter: true, threshold: 1, relative: false, spread: true },
  top1_accuracy_drop_pp: {
    label: "Top-1 accuracy drop (pp)",
    higherIsBetter: false,
    threshold: 0.5,
    relative: false,
    spread: true,
  },
  ece_shift: { label: "ECE shift", higherIsBetter: false, threshold: 0.01, relative: false, spread: false },
};

/** The y range of a fraction's trend: from a little under its lowest run (or 0) to just above 1. */
export function fractionRange(values: readonly (number | null)[]): [number, number] {
  const finite = values.filter((v): v is number => v !== null && Number.isFinite(v));
  const low = finite.length ? Math.min(...finite) : 0;
  return [Math.max(0, low - Math.max(0.02, (1 - low) * 0.1)), 1.005];
}

function isTask(metric: TrendMetric): metric is TaskTrendMetric {
  return metric.startsWith("task.");
}

/** A task metric's spec: its label and direction as the API and the metric cards state them; no per-sample
 * spread (the API serves standard errors for the divergence metrics only), so a fixed threshold in the
 * metric's unit: half a point for drops in points and dB, half a percent for shares, 5 % relative else. */
function taskSpec(metric: TaskTrendMetric, points: readonly TrendPoint[]): MetricSpec {
  const column = taskColumns(points).find((c) => c.key === metric);
  const unit = column?.unit ?? "";
  const absolute =
    unit === "pp" || unit === "dB" || /_drop$|_drop_pp$/.test(metric) ? 0.5 : unit === "fraction" ? 0.005 : null;
  return {
    label: column?.label ?? metric,
    higherIsBetter: column?.higherIsBetter ?? false,
    threshold: absolute ?? 0.05,
    relative: absolute === null,
    spread: false,
    fraction: unit === "fraction",
  };
}

/** The spec of any trend metric (a task metric's from the runs that carry it). */
export function specOf(metric: TrendMetric, points: readonly TrendPoint[]): MetricSpec {
  return isTask(metric) ? taskSpec(metric, points) : TREND_METRICS[metric];
}

/** The metrics a trend can plot: the divergence headline, then the task metrics some run has a value of. */
export function trendMetricOptions(points: readonly TrendPoint[]): { key: TrendMetric; label: string }[] {
  return [
    ...Object.entries(TREND_METRICS).map(([key, m]) => ({ key: key as TrendMetric, label: m.label })),
    ...taskColumns(points).map((c) => ({ key: c.key as TaskTrendMetric, label: `${c.label} (task)` })),
  ];
}

export function metricValue(point: TrendPoint, metric: TrendMetric): number | null {
  if (isTask(metric)) return taskValue(point, metric.slice("task.".length));
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
  if (isTask(metric)) return null;
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
  const spec = specOf(metric, points);
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

/** The page's sentence for the rule that decides (or, with one run, will decide) "worse than the last run". */
export function ruleText(points: TrendPoint[], metric: TrendMetric): string {
  const spec = specOf(metric, points);
  const verdict = latestVerdict(points, metric);
  const fixed = spec.relative ? `${(spec.threshold * 100).toFixed(0)} % of the previous value` : String(spec.threshold);
  const noise = `${NOISE_MULTIPLE.toString()}·√(se_prev² + se_last²)`;
  const bars = `Bars are ±${NOISE_MULTIPLE.toString()} standard errors.`;
  const judgement = "so this threshold is a judgement, not measured noise";
  if (verdict.basis === "noise")
    return `${bars} The latest run is marked when it is worse than the previous one by more than ${noise} = ${(verdict.limit ?? 0).toPrecision(3)}, the noise of the two runs' samples.`;
  if (verdict.basis === "fixed")
    return spec.spread
      ? `The latest run is marked when it is worse than the previous one by more than a fixed ${fixed}: one of the two runs has no per-sample spread stored, ${judgement}.`
      : `The latest run is marked when it is worse than the previous one by more than a fixed ${fixed}: there is no per-sample spread for ${spec.label}, ${judgement}.`;
  const withSpread = points.some((p) => standardError(p, metric) !== null);
  return withSpread
    ? `${bars} With a second run, the latest is marked when it is worse than the previous one by more than ${noise}.`
    : `With a second run, the latest is marked when it is worse than the previous one by more than a fixed ${fixed} (no per-sample spread for ${spec.label}, ${judgement}).`;
}
