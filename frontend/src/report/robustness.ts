// Pure helpers of the robustness panel (Robustness.tsx): the curves of a metric vs severity per slice,
// with the clean samples as severity 0, and the CSV of every point.
import type { operations } from "../client/schema";

export type FidelityRobustness = operations["getFidelityRobustness"]["responses"][200]["content"]["application/json"];
export type RobustnessSlice = FidelityRobustness["slices"][number];
export type RobustnessPoint = RobustnessSlice["points"][number];

export type PointMetric = "kl_mean_nats" | "mse_mean" | "golden_accuracy" | "compressed_accuracy" | "top1_agreement";

export interface Curve {
  slice: string;
  /** Severity 0 is the clean data; then the slice's severities, increasing. */
  x: number[];
  y: (number | null)[];
}

/** One curve per slice of `metric` against severity, starting from the clean value at severity 0. */
export function severityCurves(doc: FidelityRobustness, metric: PointMetric): Curve[] {
  return doc.slices.map((s) => ({
    slice: s.name,
    x: [0, ...s.points.map((p) => p.severity)],
    y: [doc.clean[metric], ...s.points.map((p) => p[metric])],
  }));
}

/** The divergence the document ranks by, as a label. */
export function divergenceLabel(doc: FidelityRobustness): string {
  return doc.divergence === "kl" ? "mean KL (nats)" : "mean MSE";
}

export const ROBUSTNESS_CSV_HEADER = [
  "slice",
  "severity",
  "value",
  "kl_mean_nats",
  "mse_mean",
  "top1_agreement",
  "golden_accuracy",
  "compressed_accuracy",
  "brittleness_ratio",
];

/** Every slice x severity as CSV rows (the clean data first, as slice "clean", severity 0). */
export function robustnessCsvRows(doc: FidelityRobustness): (string | number | null)[][] {
  const c = doc.clean;
  return [
    ["clean", 0, null, c.kl_mean_nats, c.mse_mean, c.top1_agreement, c.golden_accuracy, c.compressed_accuracy, 1],
    ...doc.slices.flatMap((s) =>
      s.points.map((p) => [
        s.name,
        p.severity,
        p.value,
        p.kl_mean_nats,
        p.mse_mean,
        p.top1_agreement,
        p.golden_accuracy,
        p.compressed_accuracy,
        p.brittleness_ratio,
      ]),
    ),
  ];
}

/** The slice whose worst severity has the highest brittleness ratio (null when none has one). */
export function mostBrittle(doc: FidelityRobustness): { slice: string; ratio: number } | null {
  let best: { slice: string; ratio: number } | null = null;
  for (const s of doc.slices) {
    for (const p of s.points) {
      if (p.brittleness_ratio !== null && (best === null || p.brittleness_ratio > best.ratio)) {
        best = { slice: s.name, ratio: p.brittleness_ratio };
      }
    }
  }
  return best;
}
