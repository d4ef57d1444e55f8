// Activation-shift diagnostics of a per-layer profile (GET /jobs/{id}/fidelity/layers, `shift` per layer and
// `likely_causes`), shaped for the report: the ranked causes, per-layer rows (clip rate, dead units, error
// amplification), a bar chart of clipping and dead units per layer, and one layer's golden vs compressed
// histogram. Profiles stored before the diagnostics existed have no `shift` and no causes: every helper
// returns empty results for them.
import type { Data, Layout } from "plotly.js";
import type { components } from "../client/schema";
import type { LayerFidelity, LayerProfile } from "../api/types";
import type { Cell } from "./csv";
import { formatNumber, formatPercent } from "./format";

type Schemas = components["schemas"];
export type ActivationShift = Schemas["ActivationShiftOut"];
export type LikelyCause = Schemas["LikelyCauseOut"];

export const CAUSE_LABELS: Record<LikelyCause["kind"], string> = {
  clipping: "Clipping",
  dead_units: "Dead units",
  error_growth: "Error growth",
  local_error: "Local error",
  calibration_range: "Calibration range",
};

const GOLDEN_COLOR = "#4c78a8";
const COMPRESSED_COLOR = "#f58518";
const CLIP_COLOR = "#d62728";
const DEAD_COLOR = "#9467bd";
const CALIBRATION_COLOR = "#54a24b";

export function causesOf(profile: LayerProfile): LikelyCause[] {
  return profile.likely_causes ?? [];
}

export interface ShiftRow {
  name: string;
  label: string;
  op_type: string;
  depth: number;
  shift: ActivationShift;
}

/** The layers that carry a shift, in depth order, named by their canonical id when they have one. */
export function shiftRows(profile: LayerProfile): ShiftRow[] {
  return (profile.layers ?? [])
    .filter((l): l is LayerFidelity & { shift: ActivationShift } => !!l.shift)
    .map((l) => ({ name: l.name, label: l.canonical_id ?? l.name, op_type: l.op_type, depth: l.depth, shift: l.shift }))
    .sort((a, b) => a.depth - b.depth);
}

/** "[min, max]" of a range, "—" when either end is missing. */
export function formatRange(low: number | null | undefined, high: number | null | undefined): string {
  if (low == null || high == null) return "—";
  return `[${formatNumber(low)}, ${formatNumber(high)}]`;
}

/** Dead units as a share, with the channels that never fire when there are any: "12.00 % (3 of 16 channels)". */
export function formatDeadUnits(shift: ActivationShift): string {
  const share = formatPercent(shift.dead_unit_rate, 2);
  if (!shift.dead_channels || shift.active_channels == null) return share;
  return `${share} (${shift.dead_channels.toLocaleString("en-US")} of ${shift.active_channels.toLocaleString("en-US")} channels)`;
}

/** Error amplification as "1.3×", "—" when there is none. */
export function formatAmplification(value: number | null | undefined): string {
  return value == null ? "—" : `${formatNumber(value, 3)}×`;
}

export function hasClipping(rows: readonly ShiftRow[]): boolean {
  return rows.some((r) => r.shift.clip_rate != null);
}

export function hasDeadUnits(rows: readonly ShiftRow[]): boolean {
  return rows.some((r) => r.shift.dead_unit_rate != null);
}

/** Whether the profile measured calibration ranges (the job named a calibration set that ran). Profiles
 * stored before the fields existed lack them: `!= null` covers undefined too. */
export function hasCalibration(rows: readonly ShiftRow[]): boolean {
  return rows.some((r) => r.shift.calibration_outside_rate != null);
}

/** A layer's calibration share with the counts behind it: "3.100 % (12 below, 300 above)". */
export function formatCalibration(shift: ActivationShift): string {
  const rate = shift.calibration_outside_rate;
  if (rate == null) return "—";
  const counts =
    shift.calibration_below != null && shift.calibration_above != null
      ? ` (${shift.calibration_below.toLocaleString("en-US")} below, ${shift.calibration_above.toLocaleString("en-US")} above)`
      : "";
  return `${formatPercent(rate, 3)}${counts}`;
}

/** The engine's floor on the calibration cause (worker/engine/layer_profile/causes.py CALIBRATION_RATE). */
export const CALIBRATION_RATE = 0.01;

/** The calibration_outside_rate that makes a layer a likely cause, the engine's calibration_threshold: 1 %,
 * and at least 2 / (n + 1) for n calibration samples (were the evaluation data drawn like them, one new
 * sample lies beyond their max, or their min, with probability 1 / (n + 1)). Above 1 % whenever n < 199. */
export function calibrationThreshold(calibrationSamples: number): number {
  return Math.max(CALIBRATION_RATE, 2 / (calibrationSamples + 1));
}

/** What the likely causes list says when no layer crosses a threshold: the engine's thresholds, the
 * calibration one only when the profile measured calibration ranges (over `calibrationSamples`). */
export function noCauseNote(calibrationSamples: number | null | undefined): string {
  const calibration =
    calibrationSamples == null
      ? ""
      : `, outside the calibration range ${Number((100 * calibrationThreshold(calibrationSamples)).toFixed(2))} % ` +
        `(over ${calibrationSamples.toLocaleString("en-US")} calibration samples)`;
  return `No layer crosses a threshold (clipping 1 %, dead units 5 %, error grown 4×, local SQNR 20 dB${calibration}).`;
}

/** The sentence under the shift table: what the calibration column measures, or why it is missing. */
export function calibrationNote(profile: LayerProfile, rows: readonly ShiftRow[]): string {
  if (hasCalibration(rows)) {
    const n = profile.calibration_samples;
    const over = n == null ? "" : ` (its first ${n.toLocaleString("en-US")} samples)`;
    return (
      `Outside calibration: the evaluation set's golden values outside the golden layer's range on the job's ` +
      `calibration set${over}. A quantizer calibrated there clips them.`
    );
  }
  return (
    "Calibration vs evaluation range: not measured (the job named no calibration set, or it could not be run: " +
    "see the profile's notes); the golden values outside the quantizer's calibrated range are the nearest measure."
  );
}

/** Grouped bars per layer: clip rate and dead-unit rate in %; a layer without a value has no bar. */
export function shiftFigure(rows: readonly ShiftRow[]): { data: Data[]; layout: Partial<Layout> } {
  const x = rows.map((r) => r.label);
  const percent = (v: number | null | undefined) => (v == null ? null : 100 * v);
  const data: Data[] = [];
  if (hasClipping(rows))
    data.push({
      type: "bar",
      name: "clipped (%)",
      x,
      y: rows.map((r) => percent(r.shift.clip_rate)),
      marker: { color: CLIP_COLOR },
      hovertemplate: "%{x}<br>clips %{y:.3f} %<extra></extra>",
    });
  if (hasDeadUnits(rows))
    data.push({
      type: "bar",
      name: "dead units (%)",
      x,
      y: rows.map((r) => percent(r.shift.dead_unit_rate)),
      marker: { color: DEAD_COLOR },
      hovertemplate: "%{x}<br>dead units %{y:.3f} %<extra></extra>",
    });
  if (hasCalibration(rows))
    data.push({
      type: "bar",
      name: "outside calibration (%)",
      x,
      y: rows.map((r) => percent(r.shift.calibration_outside_rate)),
      marker: { color: CALIBRATION_COLOR },
      hovertemplate: "%{x}<br>%{y:.3f} % outside the calibration range<extra></extra>",
    });
  return {
    data,
    layout: {
      barmode: "group",
      margin: { l: 56, r: 16, t: 16, b: 80 },
      xaxis: { type: "category", automargin: true },
      yaxis: { title: { text: "% of values" }, rangemode: "tozero" },
      legend: { orientation: "h", y: 1.12 },
    },
  };
}

export interface HistogramBars {
  centers: number[];
  width: number;
  golden: number[];
  compressed: number[];
}

/** Bin centers and width of a stored histogram (equal-width bins over [lower, upper]). */
export function histogramBars(shift: ActivationShift): HistogramBars | null {
  const h = shift.histogram;
  if (!h || h.golden.length === 0) return null;
  const bins = h.golden.length;
  const width = (h.upper - h.lower) / bins;
  return {
    centers: Array.from({ length: bins }, (_, i) => h.lower + (i + 0.5) * width),
    width,
    golden: h.golden,
    compressed: h.compressed,
  };
}

/** Golden and compressed histograms overlaid; the quantizer's range as dashed lines when there is one. */
export function histogramFigure(row: ShiftRow): { data: Data[]; layout: Partial<Layout> } {
  const bars = histogramBars(row.shift);
  if (!bars) return { data: [], layout: {} };
  const trace = (name: string, y: number[], color: string): Data => ({
    type: "bar",
    name,
    x: bars.centers,
    y,
    width: bars.width,
    opacity: 0.6,
    marker: { color },
    hovertemplate: `${name}: %{y} values near %{x:.4g}<extra></extra>`,
  });
  const q = row.shift;
  const lines =
    q.quantizer_min != null && q.quantizer_max != null
      ? [q.quantizer_min, q.quantizer_max].map((v) => ({
          type: "line" as const,
          x0: v,
          x1: v,
          yref: "paper" as const,
          y0: 0,
          y1: 1,
          line: { color: CLIP_COLOR, dash: "dash" as const, width: 1 },
        }))
      : [];
  return {
    data: [trace("golden", bars.golden, GOLDEN_COLOR), trace("compressed", bars.compressed, COMPRESSED_COLOR)],
    layout: {
      barmode: "overlay",
      margin: { l: 56, r: 16, t: 16, b: 48 },
      xaxis: { title: { text: "activation value" } },
      yaxis: { title: { text: "values" }, rangemode: "tozero" },
      legend: { orientation: "h", y: 1.12 },
      shapes: lines,
    },
  };
}

/** What the histogram leaves out (values outside the first batch's golden range), as a sentence. */
export function outsideNote(shift: ActivationShift): string {
  const h = shift.histogram;
  if (!h) return "";
  const golden = h.golden_below + h.golden_above;
  const compressed = h.compressed_below + h.compressed_above;
  if (golden === 0 && compressed === 0) return "";
  return (
    `Outside the bins (the golden range of the first sample): ${golden.toLocaleString("en-US")} golden and ` +
    `${compressed.toLocaleString("en-US")} compressed of ${h.n_counted.toLocaleString("en-US")} values counted; ` +
    "the full ranges are in the table."
  );
}

export const SHIFT_CSV_HEADER = [
  "depth",
  "layer",
  "op_type",
  "golden_min",
  "golden_max",
  "compressed_min",
  "compressed_max",
  "quantizer_min",
  "quantizer_max",
  "clip_rate",
  "golden_outside_rate",
  "dead_unit_rate",
  "dead_channels",
  "error_amplification",
  "calibration_min",
  "calibration_max",
  "calibration_outside_rate",
];

export function shiftCsv(rows: readonly ShiftRow[]): { header: string[]; rows: Cell[][] } {
  return {
    header: SHIFT_CSV_HEADER,
    rows: rows.map((r) => [
      r.depth,
      r.label,
      r.op_type,
      r.shift.golden_min,
      r.shift.golden_max,
      r.shift.compressed_min,
      r.shift.compressed_max,
      r.shift.quantizer_min,
      r.shift.quantizer_max,
      r.shift.clip_rate,
      r.shift.golden_outside_rate,
      r.shift.dead_unit_rate,
      r.shift.dead_channels,
      r.shift.error_amplification,
      r.shift.calibration_min ?? null,
      r.shift.calibration_max ?? null,
      r.shift.calibration_outside_rate ?? null,
    ]),
  };
}

/** A cause's figures as "name = value" pairs, rates as percentages. */
export function causeNumbers(cause: LikelyCause): string[] {
  return Object.entries(cause.numbers).map(([key, value]) =>
    key.endsWith("_rate") ? `${key} = ${formatPercent(value, 2)}` : `${key} = ${formatNumber(value)}`,
  );
}

/** The engine's floors for the clipping and dead-unit causes (worker/engine/layer_profile/causes.py). */
export const CLIP_RATE = 0.01;
export const DEAD_UNIT_RATE = 0.05;

function worstBy(rows: readonly ShiftRow[], value: (r: ShiftRow) => number | null | undefined) {
  let worst: { row: ShiftRow; value: number } | null = null;
  for (const row of rows) {
    const v = value(row);
    if (v != null && Number.isFinite(v) && (worst === null || v > worst.value)) worst = { row, value: v };
  }
  return worst;
}

/** The section's lead in words: how many layers clip or lost units past the causes' floors and which is worst,
 * and where the error is amplified most ("" without rows). */
export function shiftSummary(rows: readonly ShiftRow[]): string {
  if (rows.length === 0) return "";
  const n = rows.length;
  const parts: string[] = [];
  if (hasClipping(rows)) {
    const clipping = rows.filter((r) => (r.shift.clip_rate ?? 0) > CLIP_RATE).length;
    const worst = worstBy(rows, (r) => r.shift.clip_rate);
    parts.push(
      clipping === 0
        ? `no layer clips more than ${formatPercent(CLIP_RATE, 0)} of its values`
        : `${clipping.toString()} clip more than ${formatPercent(CLIP_RATE, 0)} of their values (most: ${worst?.row.label ?? "—"}, ${formatPercent(worst?.value ?? null, 2)})`,
    );
  }
  if (hasDeadUnits(rows)) {
    const dead = rows.filter((r) => (r.shift.dead_unit_rate ?? 0) > DEAD_UNIT_RATE).length;
    const worst = worstBy(rows, (r) => r.shift.dead_unit_rate);
    parts.push(
      dead === 0
        ? `none lost more than ${formatPercent(DEAD_UNIT_RATE, 0)} of its firing units`
        : `${dead.toString()} lost more than ${formatPercent(DEAD_UNIT_RATE, 0)} of their firing units (most: ${worst?.row.label ?? "—"}, ${formatPercent(worst?.value ?? null, 2)})`,
    );
  }
  const amplified = worstBy(rows, (r) => r.shift.error_amplification);
  if (amplified && amplified.value > 1)
    parts.push(`the error is amplified most into ${amplified.row.label} (${formatAmplification(amplified.value)})`);
  const layers = `${n.toLocaleString("en-US")} layer${n === 1 ? "" : "s"}`;
  if (parts.length === 0) return `How the activations of ${layers} moved: ranges and histograms below.`;
  return `Of ${layers} with activations compared, ${parts.join("; ")}.`;
}
