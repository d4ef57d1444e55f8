// The page's view of a fidelity summary (GET /jobs/{id}/fidelity → summary), read from the generated types
// (backend/api/result_schemas/fidelity.py): no field is looked up by name at run time.
import type { CalibrationOut, FidelitySummary, OutputMetrics } from "../api/types";

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
  outputs: Record<string, OutputMetrics>;
  /** Output the per-sample table was written for. */
  perSampleOutput: string;
  nFlagged: number | null;
  thresholdKl: number | null;
  flagRule: string | null;
  concentration: Concentration | null;
  warnings: string[];
  notes: string[];
}

export function readSummary(summary: FidelitySummary): SummaryView {
  const outputs = summary.outputs;
  const primaryOutput = summary.primary_output || (Object.keys(outputs)[0] ?? "");
  const perSample = summary.per_sample_summary;
  const concentration = perSample?.concentration ?? null;
  return {
    nSamples: summary.n_samples,
    primaryOutput,
    outputs,
    perSampleOutput: perSample?.output || primaryOutput,
    nFlagged: perSample?.n_flagged ?? null,
    thresholdKl: perSample?.threshold_kl ?? null,
    flagRule: perSample?.flag_rule ?? null,
    concentration: concentration && {
      measure: concentration.measure,
      worst1pctShare: concentration.worst_1pct_share,
      worst10pctShare: concentration.worst_10pct_share,
      verdict: concentration.verdict,
      rule: concentration.rule,
    },
    warnings: summary.warnings,
    notes: summary.notes,
  };
}

function view(calibration: CalibrationOut): Calibration {
  return {
    ece: calibration.ece,
    mce: calibration.mce,
    bins: calibration.bins.map(({ lower, upper, count, confidence, accuracy }) => ({
      lower,
      upper,
      count,
      confidence,
      accuracy,
    })),
  };
}

/** The reliability bins of one model, present for classification outputs of a labelled dataset. */
export function readCalibration(metrics: OutputMetrics | null, role: "golden" | "compressed"): Calibration | null {
  if (metrics?.kind !== "classification") return null;
  const calibration = metrics.labels?.calibration?.[role];
  return calibration ? view(calibration) : null;
}
