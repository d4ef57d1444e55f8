// A typed view of a fidelity summary (GET /jobs/{id}/fidelity → summary). See worker/engine/fidelity.py
// for how it is written.
import { arrayAt, isObject, numberAt, objectAt, stringAt, stringsAt, type JsonObject } from "./json";

export interface CalibrationBin {
  lower: number;
  upper: number;
  count: number;
  confidence: number | null;
  accuracy: number | null;
}

export interface Calibration {
  ece: number | null;
  mce: number | null;
  bins: CalibrationBin[];
}

export interface Concentration {
  measure: string;
  worst1pctShare: number | null;
  worst10pctShare: number | null;
  verdict: string;
  rule: string;
}

export interface SummaryView {
  nSamples: number;
  primaryOutput: string;
  /** Metrics per output name. */
  outputs: Record<string, JsonObject>;
  /** Output the per-sample table was written for. */
  perSampleOutput: string;
  nFlagged: number | null;
  thresholdKl: number | null;
  flagRule: string | null;
  concentration: Concentration | null;
  warnings: string[];
  notes: string[];
}

export function readSummary(summary: JsonObject): SummaryView {
  const outputs: Record<string, JsonObject> = {};
  for (const [name, metrics] of Object.entries(objectAt(summary, "outputs") ?? {})) {
    if (isObject(metrics)) outputs[name] = metrics;
  }
  const primaryOutput = stringAt(summary, "primary_output") ?? Object.keys(outputs)[0] ?? "";
  const concentration = objectAt(summary, "per_sample_summary.concentration");
  return {
    nSamples: numberAt(summary, "n_samples") ?? 0,
    primaryOutput,
    outputs,
    perSampleOutput: stringAt(summary, "per_sample_summary.output") ?? primaryOutput,
    nFlagged: numberAt(summary, "per_sample_summary.n_flagged"),
    thresholdKl: numberAt(summary, "per_sample_summary.threshold_kl"),
    flagRule: stringAt(summary, "per_sample_summary.flag_rule"),
    concentration: concentration && {
      measure: stringAt(concentration, "measure") ?? "kl",
      worst1pctShare: numberAt(concentration, "worst_1pct_share"),
      worst10pctShare: numberAt(concentration, "worst_10pct_share"),
      verdict: stringAt(concentration, "verdict") ?? "unknown",
      rule: stringAt(concentration, "rule") ?? "",
    },
    warnings: stringsAt(summary, "warnings"),
    notes: stringsAt(summary, "notes"),
  };
}

function readBin(bin: unknown): CalibrationBin | null {
  const lower = numberAt(bin, "lower");
  const upper = numberAt(bin, "upper");
  if (lower === null || upper === null) return null;
  return {
    lower,
    upper,
    count: numberAt(bin, "count") ?? 0,
    confidence: numberAt(bin, "confidence"),
    accuracy: numberAt(bin, "accuracy"),
  };
}

/** The reliability bins of one model, present for classification outputs of a labelled dataset. */
export function readCalibration(metrics: JsonObject, role: "golden" | "compressed"): Calibration | null {
  const calibration = objectAt(metrics, `labels.calibration.${role}`);
  if (!calibration) return null;
  return {
    ece: numberAt(calibration, "ece"),
    mce: numberAt(calibration, "mce"),
    bins: arrayAt(calibration, "bins")
      .map(readBin)
      .filter((b): b is CalibrationBin => b !== null),
  };
}
