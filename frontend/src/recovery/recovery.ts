// Recovery results as the dashboard shows them: the before/after rows of each method step and the lineage
// line golden → compressed → recovered. Pure functions over the API's typed documents (tested).
import type { components } from "../client/schema";
import { formatNumber, formatPercent } from "../lib/format";
import { formatKl } from "../lib/sensitivity";

export type RecoverySummary = components["schemas"]["RecoverySummaryOut"];
export type RecoveryLineage = components["schemas"]["RecoveryLineageOut"];
type Fidelity = components["schemas"]["PointFidelityOut"];

export interface StepRow {
  method: string;
  kl: string;
  klRatio: string;
  top1: string;
  accuracy: string;
  seconds: string;
}

const ratio = (value: number | null, base: number | null): string =>
  value === null || base === null || base === 0 ? "—" : `${(value / base).toFixed(2)}×`;

/** One row per step ("before", then each method): held-out KL, its ratio to "before", top-1 agreement,
 * accuracy (when the dataset is labelled) and the method's time. */
export function stepRows(summary: RecoverySummary): StepRow[] {
  const base = summary.before.kl_mean;
  return summary.steps.map((step) => {
    const f: Fidelity = step.fidelity;
    return {
      method: step.method === "before" ? "compressed (no recovery)" : step.method.replace("_", " "),
      kl: formatKl(f.kl_mean),
      klRatio: ratio(f.kl_mean, base),
      top1: formatPercent(f.top1_agreement),
      accuracy: formatPercent(f.accuracy_compressed),
      seconds: step.method === "before" ? "—" : `${step.seconds.toFixed(2)} s`,
    };
  });
}

/** "golden → w4-sym-channel → equalization, adaround, bias correction". */
export function lineageLine(lineage: RecoveryLineage): string[] {
  return ["golden", lineage.point_id, lineage.methods.map((m) => m.name.replace("_", " ")).join(", ") || "recovered"];
}

export interface TaskRow {
  metric: string;
  before: string;
  after: string;
  /** Whether recovery moved the metric the better way, the worse way, or not at all (or cannot say). */
  verdict: "better" | "worse" | "same" | null;
}

/** The task's numbers before and after recovery (params.task), each with which way recovery moved it by the
 * API's direction rule; [] when the job scored no task. */
export function taskRows(summary: RecoverySummary): TaskRow[] {
  return (summary.task?.metrics ?? []).map((m) => {
    const { before, after } = m;
    let verdict: TaskRow["verdict"] = null;
    if (before != null && after != null)
      verdict = after === before ? "same" : after > before === m.higher_is_better ? "better" : "worse";
    return { metric: m.metric, before: formatNumber(before), after: formatNumber(after), verdict };
  });
}
