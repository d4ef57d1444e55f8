// The bounds a person sets on a sweep's frontier (max KL, min top-1, max size, max latency at a batch size, max
// run-time memory):
// their query parameters, the test a point passes, and the sliders that set them (log where values span
// decades).
import { type Direction } from "./sweepObjectives";
import { finite } from "./sweep";

// ---------------------------------------------------------------------------------------------------------
// Bounds

/** The constraints a person sets on the page; null = no bound. */
export interface Bounds {
  maxKl: number | null;
  minTop1: number | null;
  maxSize: number | null;
  /** On the p50 latency at the page's latency batch size. */
  maxLatency: number | null;
  /** On the run-time memory (runtime_memory_mib, MiB). */
  maxMemory: number | null;
  /** On the page's task metric (the query's `taskMetric`): at most or at least, by the metric's direction. */
  taskLimit: number | null;
}

export const NO_BOUNDS: Bounds = {
  maxKl: null,
  minTop1: null,
  maxSize: null,
  maxLatency: null,
  maxMemory: null,
  taskLimit: null,
};

export interface BoundSpec {
  objective: string;
  atMost: number | null;
  atLeast: number | null;
}

/** The bound specs of `bounds`; the task limit bounds `task` (a task metric and the direction that is better:
 * a limit keeps the acceptable side, at most a drop, at least an agreement). */
export function boundSpecs(
  bounds: Bounds,
  latencyBatch: number | null,
  task: { metric: string; direction: Direction } | null = null,
): BoundSpec[] {
  const specs: BoundSpec[] = [];
  if (bounds.maxKl !== null) specs.push({ objective: "kl_mean", atMost: bounds.maxKl, atLeast: null });
  if (bounds.minTop1 !== null) specs.push({ objective: "top1_agreement", atMost: null, atLeast: bounds.minTop1 });
  if (bounds.maxSize !== null) specs.push({ objective: "size_bytes", atMost: bounds.maxSize, atLeast: null });
  if (bounds.maxLatency !== null && latencyBatch !== null)
    specs.push({ objective: `latency_p50_ms_b${latencyBatch.toString()}`, atMost: bounds.maxLatency, atLeast: null });
  if (bounds.maxMemory !== null)
    specs.push({ objective: "runtime_memory_mib", atMost: bounds.maxMemory, atLeast: null });
  if (bounds.taskLimit !== null && task !== null) {
    const limit = bounds.taskLimit;
    specs.push(
      task.direction === "min"
        ? { objective: task.metric, atMost: limit, atLeast: null }
        : { objective: task.metric, atMost: null, atLeast: limit },
    );
  }
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
