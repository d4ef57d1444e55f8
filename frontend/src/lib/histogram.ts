// Binning of per-sample divergences for the histogram. KL values of a good compressed model span several
// orders of magnitude, so bins can be equal-width in log10(value); values of 0 cannot sit on a log axis and
// are counted apart.

export interface Histogram {
  /** Bin edges in the values' own units (length = counts.length + 1). */
  edges: number[];
  counts: number[];
  /** Whether the edges are equally spaced in log10. */
  log: boolean;
  /** Finite values ≤ 0 left out of a log histogram. */
  nonPositive: number;
  /** null, NaN or ±Inf values, never binned. */
  missing: number;
}

const MAX_BINS = 50;

function finiteValues(values: readonly (number | null)[]): number[] {
  return values.filter((v): v is number => typeof v === "number" && Number.isFinite(v));
}

/** True when the positive values span at least `decades` orders of magnitude. */
export function spansDecades(values: readonly (number | null)[], decades = 2): boolean {
  const positive = finiteValues(values).filter((v) => v > 0);
  if (positive.length < 2) return false;
  return Math.log10(Math.max(...positive)) - Math.log10(Math.min(...positive)) >= decades;
}

/** Equal-width bins over [min, max] (log10 space when `log`); the maximum falls in the last bin. */
export function histogram(values: readonly (number | null)[], options: { log: boolean; bins?: number }): Histogram {
  const finite = finiteValues(values);
  const missing = values.length - finite.length;
  const binned = options.log ? finite.filter((v) => v > 0) : finite;
  const nonPositive = finite.length - binned.length;
  if (binned.length === 0) return { edges: [], counts: [], log: options.log, nonPositive, missing };

  const scale = options.log ? Math.log10 : (v: number) => v;
  const unscale = options.log ? (v: number) => 10 ** v : (v: number) => v;
  const scaled = binned.map(scale);
  let lo = Math.min(...scaled);
  let hi = Math.max(...scaled);
  if (lo === hi) {
    const pad = options.log ? 0.5 : Math.abs(lo) * 0.05 || 0.5;
    lo -= pad;
    hi += pad;
  }
  const n = options.bins ?? Math.max(1, Math.min(MAX_BINS, Math.ceil(Math.sqrt(binned.length))));
  const width = (hi - lo) / n;
  const counts = new Array<number>(n).fill(0);
  for (const v of scaled) {
    const index = Math.min(n - 1, Math.floor((v - lo) / width));
    counts[index] = (counts[index] ?? 0) + 1;
  }
  const edges = Array.from({ length: n + 1 }, (_, i) => unscale(i === n ? hi : lo + i * width));
  return { edges, counts, log: options.log, nonPositive, missing };
}
