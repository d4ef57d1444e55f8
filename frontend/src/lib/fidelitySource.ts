// Where a sweep point's fidelity figures come from (issues 31 and 33): the deployed file run in onnxruntime
// (the export the sweep timed), or the simulation when no runnable export was measured. The worker writes
// fidelity_source / fidelity_export_kind / fidelity_note and, when measured, the simulation beside it
// (worker/engine/sweep/deployed_fidelity.py); points stored before that carry none of them.
import type { PointFidelity, SweepPointDoc } from "../api/types";
import { formatNumber, formatPercent } from "./format";
import { formatKl } from "./sensitivity";

export type FidelitySource = "measured" | "simulated";

/** The point's fidelity source, or null for a point stored before the field existed (or without details). */
export function fidelitySource(point: SweepPointDoc | null): FidelitySource | null {
  const source = point?.fidelity_source;
  return source === "measured" || source === "simulated" ? source : null;
}

/** One line: "measured on the deployed file (real-matmulnbits)" or "simulated (no runnable export)". */
export function fidelitySourceLine(point: SweepPointDoc | null): string | null {
  const source = fidelitySource(point);
  if (source === null || point === null) return null;
  if (source === "measured") return `measured on the deployed file (${point.fidelity_export_kind ?? "export"})`;
  // the worker's note: "simulated: no runnable export (the simulated file is not a runtime form)"
  const why = (point.fidelity_note ?? "").replace(/^simulated: /, "").split(" (")[0];
  return `simulated (${why || "no runnable export"})`;
}

export interface GapRow {
  label: string;
  simulated: string;
  measured: string;
  /** measured − simulated, formatted; "—" when either is missing. */
  difference: string;
}

type Format = (v: number | null) => string;
const pct: Format = (v) => formatPercent(v);
const pp: Format = (v) => (v === null ? "—" : `${formatNumber(v * 100, 3)} pp`);
const num: Format = (v) => formatNumber(v);
const signed = (format: Format, v: number) => (v > 0 ? `+${format(v)}` : format(v));

const ROWS: [string, keyof PointFidelity, Format, Format][] = [
  ["KL mean", "kl_mean", formatKl, formatKl],
  ["Top-1 agreement", "top1_agreement", pct, pp],
  ["Accuracy", "accuracy_compressed", pct, pp],
  ["SQNR (dB)", "sqnr_db", num, num],
  ["Cosine mean", "cosine_mean", (v) => formatNumber(v, 6), (v) => formatNumber(v, 6)],
  ["MSE", "mse", num, num],
];

/** Simulated against measured, metric by metric (the task's own numbers too), when the point has both. */
export function fidelityGap(point: SweepPointDoc | null): GapRow[] {
  const measured = point?.fidelity ?? null;
  const simulated = point?.fidelity_simulated ?? null;
  if (fidelitySource(point) !== "measured" || measured === null || simulated === null) return [];
  const figure = (f: PointFidelity, key: keyof PointFidelity) => {
    const v = f[key];
    return typeof v === "number" && Number.isFinite(v) ? v : null;
  };
  const row = (label: string, s: number | null, m: number | null, format: Format, diff: Format): GapRow => ({
    label,
    simulated: format(s),
    measured: format(m),
    difference: s === null || m === null ? "—" : signed(diff, m - s),
  });
  const rows = ROWS.map(([label, key, format, diff]) =>
    row(label, figure(simulated, key), figure(measured, key), format, diff),
  ).filter((r) => r.simulated !== "—" || r.measured !== "—");
  const task = (f: PointFidelity) => f.task_metrics ?? {};
  for (const [name, m] of Object.entries(task(measured))) {
    const s = task(simulated)[name] ?? null;
    rows.push(row(`task.${name}`, s, m, num, num));
  }
  return rows;
}
