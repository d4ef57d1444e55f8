// The SQNR axis of the layer profile's chart: where infinite SQNRs are drawn (a cap above every finite value)
// and the ticks, "∞" at the cap.
import type { LayerFidelity } from "../api/types";
import { formatNumber } from "./format";
import { countInfinite, KINDS, sqnrOf, statsOf } from "./layerProfile";

function finiteSqnrs(layers: readonly LayerFidelity[]): number[] {
  return layers
    .flatMap((l) => KINDS.map((k) => sqnrOf(statsOf(l, k))))
    .filter((v): v is number => v !== null && Number.isFinite(v));
}

/**
 * The y at which infinite SQNRs are drawn: clearly above every finite SQNR (at least 5 dB and a quarter of
 * their spread), where the axis reads "∞" instead of a number. 0 when no SQNR is finite.
 */
export function infinityCap(layers: readonly LayerFidelity[]): number {
  const values = finiteSqnrs(layers);
  if (values.length === 0) return 0;
  const hi = Math.max(...values);
  const lo = Math.min(...values);
  return hi + Math.max(5, 0.25 * (hi - lo));
}

/** About `target` round tick values (steps of 1, 2 or 5 × 10ⁿ) within [lo, hi]. */
export function niceTicks(lo: number, hi: number, target = 5): number[] {
  if (!(hi > lo)) return Number.isFinite(lo) ? [lo] : [];
  const raw = (hi - lo) / target;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / magnitude; // 1 ≤ norm < 10
  const step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  const ticks: number[] = [];
  for (let i = Math.ceil(lo / step); i * step <= hi + step * 1e-9; i += 1)
    ticks.push(Number((i * step).toPrecision(12)));
  return ticks;
}

export interface InfinityAxis {
  tickvals: number[];
  ticktext: string[];
}

/**
 * The SQNR axis ticks when some SQNR is infinite: round ticks over the finite values, and "∞" at the cap.
 * Null when nothing is infinite (Plotly's own ticks and range then).
 */
export function infinityAxis(layers: readonly LayerFidelity[]): InfinityAxis | null {
  if (countInfinite(layers) === 0) return null;
  const cap = infinityCap(layers);
  const values = finiteSqnrs(layers);
  if (values.length === 0) return { tickvals: [cap], ticktext: ["∞"] };
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  // No number tick crowding the ∞ one. Plotly still sets the range (room for markers and the arrow).
  const ticks = niceTicks(lo, hi).filter((t) => cap - t >= 0.1 * (cap - lo));
  return {
    tickvals: [...ticks, cap],
    ticktext: [...ticks.map((t) => formatNumber(t)), "∞"],
  };
}
