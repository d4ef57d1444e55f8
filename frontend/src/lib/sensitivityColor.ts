// The colour axis of a sensitivity heatmap: a log scale of KL (a KL of exactly 0 drawn one decade below the
// smallest positive one, read "0" on the colour bar) or −SQNR in dB when the output is not a classifier's.
import type { SensitivityReport } from "../api/types";
import { formatNumber } from "./format";
import { niceTicks } from "./layerProfileAxes";
import { finite, proxyMetric, type Grid } from "./sensitivity";

// ---------------------------------------------------------------------------------------------------------
// Colour axis

export interface ColorAxis {
  /** What Plotly colours: log10(KL) (zeros at `floor`), or −SQNR; null = gap. */
  z: (number | null)[][];
  zmin: number;
  zmax: number;
  tickvals: number[];
  ticktext: string[];
  title: string;
  /** The colour bar's title. */
  short: string;
  log: boolean;
  /** Cells at exactly 0 (drawn at the floor, "0" on the colour bar). */
  zeros: number;
  /** Cells without a number (gaps). */
  missing: number;
}

/** Decades lo..hi, thinned to at most `max` ticks. */
function decades(lo: number, hi: number, max = 8): number[] {
  const first = Math.ceil(lo - 1e-9);
  const last = Math.floor(hi + 1e-9);
  const step = Math.max(1, Math.ceil((last - first + 1) / max));
  const out: number[] = [];
  for (let d = first; d <= last; d += step) out.push(d);
  return out;
}

/** KL on a log colour scale. Zeros (and tiny negative round-off) sit one decade below the smallest positive. */
export function logColorAxis(values: Grid, title = "KL mean (nats)"): ColorAxis {
  const positives = values.flat().filter((v): v is number => finite(v) && v > 0);
  let zeros = 0;
  let missing = 0;
  for (const v of values.flat()) {
    if (!finite(v)) missing += 1;
    else if (v <= 0) zeros += 1;
  }
  if (positives.length === 0) {
    const z = values.map((row) => row.map((v) => (finite(v) ? 0 : null)));
    return {
      z,
      zmin: -1,
      zmax: 1,
      tickvals: zeros ? [0] : [],
      ticktext: zeros ? ["0"] : [],
      title,
      short: "KL<br>nats",
      log: true,
      zeros,
      missing,
    };
  }
  const lo = Math.log10(Math.min(...positives));
  const hi = Math.log10(Math.max(...positives));
  const floor = Math.floor(lo + 1e-9) - 1;
  const z = values.map((row) => row.map((v) => (!finite(v) ? null : v > 0 ? Math.log10(v) : floor)));
  let tickvals = decades(lo, hi);
  if (tickvals.length < 2) tickvals = hi - lo < 1e-9 ? [lo] : [lo, hi];
  const ticktext = tickvals.map((t) => formatNumber(Number((10 ** t).toPrecision(3))));
  if (zeros > 0) {
    tickvals = [floor, ...tickvals];
    ticktext.unshift("0");
  }
  let zmin = zeros > 0 ? floor : lo;
  let zmax = hi;
  if (zmax - zmin < 1e-9) {
    zmin -= 0.5;
    zmax += 0.5;
  }
  return {
    z,
    zmin,
    zmax,
    tickvals,
    ticktext,
    title: `${title}, log scale`,
    short: "KL<br>nats",
    log: true,
    zeros,
    missing,
  };
}

/** −SQNR on a linear colour scale (more damage = darker); the colour bar reads SQNR in dB. */
export function sqnrColorAxis(sqnr: Grid): ColorAxis {
  let missing = 0;
  const z = sqnr.map((row) =>
    row.map((v) => {
      if (!finite(v)) {
        missing += 1;
        return null;
      }
      return -v;
    }),
  );
  const scores = z.flat().filter((v): v is number => v !== null);
  let zmin = scores.length ? Math.min(...scores) : 0;
  let zmax = scores.length ? Math.max(...scores) : 1;
  if (zmax - zmin < 1e-9) {
    zmin -= 1;
    zmax += 1;
  }
  const tickvals = niceTicks(zmin, zmax);
  return {
    z,
    zmin,
    zmax,
    tickvals,
    ticktext: tickvals.map((t) => formatNumber(-t)),
    title: "SQNR (dB), lower = more damage",
    short: "SQNR<br>dB",
    log: false,
    zeros: 0,
    missing,
  };
}

export function colorAxisOf(report: SensitivityReport): ColorAxis {
  return proxyMetric(report) === "kl" ? logColorAxis(report.matrix.kl_mean) : sqnrColorAxis(report.matrix.sqnr_db);
}
