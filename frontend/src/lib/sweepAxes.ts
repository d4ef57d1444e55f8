// The two axes of a sweep's scatter: log where the values span decades (a KL of exactly 0 — the golden
// model — sits at a "0" tick one decade below the smallest positive value), with the ticks, labels and the
// direction that is better.
import type { LayoutAxis } from "plotly.js";
import { formatCount, formatNumber } from "./format";
import { axisLabel, objectiveInfo, type Direction, type ObjectiveInfo } from "./sweepObjectives";
import { finite } from "./sweep";

// ---------------------------------------------------------------------------------------------------------
// Axes

/** A log axis needs values that are never negative and at least one positive (zeros sit at "0"). */
export function canLog(values: readonly (number | null | undefined)[]): boolean {
  const numbers = values.filter(finite);
  return numbers.length > 0 && numbers.every((v) => v >= 0) && numbers.some((v) => v > 0);
}

/** "2 KiB", "512 B", "1.5 MiB": short binary sizes for ticks. */
export function shortBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = bytes;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${Number(size.toPrecision(3)).toString()} ${units[unit] ?? ""}`;
}

function thin(values: number[], max: number): number[] {
  const step = Math.max(1, Math.ceil(values.length / max));
  return values.filter((_, i) => i % step === 0);
}

/** Ticks (in data units) inside [10^lo, 10^hi]: 1-2-5 steps over a narrow range, decades or powers of 2. */
export function logTicks(lo: number, hi: number, binary = false, max = 7): number[] {
  if (binary) {
    const out: number[] = [];
    for (let k = Math.ceil(lo / Math.log10(2) - 1e-9); k <= Math.floor(hi / Math.log10(2) + 1e-9); k += 1)
      out.push(2 ** k);
    return thin(out, max);
  }
  const out: number[] = [];
  const steps = hi - lo <= 1.5 ? [1, 2, 5] : [1];
  for (let d = Math.floor(lo); d <= Math.ceil(hi); d += 1)
    for (const m of steps) {
      const v = Number((m * 10 ** d).toPrecision(12));
      const e = Math.log10(v);
      if (e >= lo - 1e-9 && e <= hi + 1e-9) out.push(v);
    }
  return thin(out, max);
}

export interface Axis {
  name: string;
  info: ObjectiveInfo;
  direction: Direction;
  log: boolean;
  /** Where a value is drawn (data units); null: not drawable. */
  map: (v: number | null | undefined) => number | null;
  /** Values at exactly 0 drawn at the "0" tick of a log axis. */
  zeros: number;
  layout: Partial<LayoutAxis>;
}

function better(side: "x" | "y", direction: Direction): string {
  if (side === "x") return direction === "min" ? "← better" : "better →";
  return direction === "min" ? "↓ better" : "↑ better";
}

/**
 * One axis of the scatter. `log`: wanted (null: the objective's default); granted only when the values allow it.
 * On a log axis zeros are drawn one decade (bytes: 8×) below the smallest positive value, at a tick "0".
 */
export function buildAxis(
  name: string,
  direction: Direction,
  log: boolean | null,
  values: readonly (number | null | undefined)[],
  side: "x" | "y",
): Axis {
  const info = objectiveInfo(name);
  const useLog = (log ?? info.log) && canLog(values);
  const title = `${axisLabel(name)}${useLog ? ", log scale" : ""}   ${better(side, direction)}`;
  if (!useLog) {
    return {
      name,
      info,
      direction,
      log: false,
      map: (v) => (finite(v) ? v : null),
      zeros: 0,
      layout: {
        type: "linear",
        title: { text: title },
        autorange: true,
        zeroline: false,
        ...(info.percent ? { tickformat: ".1~%" } : {}),
      },
    };
  }
  const binary = info.unit === "bytes";
  const positives = values.filter((v): v is number => finite(v) && v > 0);
  const zeros = values.filter((v) => finite(v) && v <= 0).length;
  const lo = Math.log10(Math.min(...positives));
  const hi = Math.log10(Math.max(...positives));
  const floorExp = binary ? (Math.floor(lo / Math.log10(2)) - 3) * Math.log10(2) : Math.floor(lo + 1e-9) - 1;
  const floor = zeros > 0 ? 10 ** floorExp : null;
  const bottom = floor === null ? lo : floorExp;
  const pad = Math.max(0.1, 0.08 * (hi - bottom));
  const range: [number, number] = [bottom - pad, hi + pad];
  let ticks = logTicks(range[0], range[1], binary);
  if (floor !== null) ticks = ticks.filter((t) => Math.log10(t) > floorExp + 0.3);
  const count = ["params_kept", "macs", "bops"].includes(name);
  const text = (t: number) =>
    binary ? shortBytes(t) : count ? formatCount(t) : formatNumber(Number(t.toPrecision(3)));
  const tickvals = floor === null ? ticks : [floor, ...ticks];
  const ticktext = floor === null ? ticks.map(text) : ["0", ...ticks.map(text)];
  return {
    name,
    info,
    direction,
    log: true,
    map: (v) => (!finite(v) ? null : v > 0 ? v : floor),
    zeros,
    layout: {
      type: "log",
      title: { text: title },
      range,
      tickmode: "array",
      tickvals,
      ticktext,
      zeroline: false,
    },
  };
}
