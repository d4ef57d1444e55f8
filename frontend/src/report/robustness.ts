// Pure helpers of the robustness panel (Robustness.tsx): the curves of a metric vs severity per slice,
// with the clean samples as severity 0, and the CSV of every point.
import type { operations } from "../client/schema";

export type FidelityRobustness = operations["getFidelityRobustness"]["responses"][200]["content"]["application/json"];
export type RobustnessSlice = FidelityRobustness["slices"][number];
export type RobustnessPoint = RobustnessSlice["points"][number];

export type PointMetric =
  "kl_mean_nats" | "mse_mean" | "cosine_mean" | "golden_accuracy" | "compressed_accuracy" | "top1_agreement";

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

/** Readable names of the slices (unknown names are shown as they come). */
export const SLICE_LABELS: Record<string, string> = {
  gaussian_noise: "Gaussian noise",
  brightness: "brightness",
  contrast: "contrast",
  gaussian_blur: "Gaussian blur",
  occlusion: "occlusion",
  jpeg: "JPEG",
  token_replacement: "token replacement",
  fgsm: "FGSM (adversarial)",
  pgd: "PGD (adversarial)",
};

export function sliceLabel(name: string): string {
  return SLICE_LABELS[name] ?? name;
}

const trim = (v: number) => Number(v.toPrecision(3)).toString();

/** A severity's strength with its unit, e.g. "σ 0.25 std", "quality 15", "15 % of tokens", "ε 3 % of range". */
export function sliceValue(name: string, value: number): string {
  switch (name) {
    case "gaussian_noise":
      return `σ ${trim(value)} std`;
    case "brightness":
      return `+${trim(value)} std`;
    case "contrast":
      return `×${trim(value)}`;
    case "gaussian_blur":
      return `σ ${trim(value)} px`;
    case "occlusion":
      return `${trim(value * 100)} % of side`;
    case "jpeg":
      return `quality ${value.toFixed(0)}`;
    case "token_replacement":
      return `${trim(value * 100)} % of tokens`;
    case "fgsm":
    case "pgd":
      return `ε ${trim(value * 100)} % of range`;
    default:
      return trim(value);
  }
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
  "cosine_mean",
  "top1_agreement",
  "golden_accuracy",
  "compressed_accuracy",
  "brittleness_ratio",
];

/** Every slice x severity as CSV rows (the clean data first, as slice "clean", severity 0). */
export function robustnessCsvRows(doc: FidelityRobustness): (string | number | null)[][] {
  const c = doc.clean;
  return [
    [
      "clean",
      0,
      null,
      c.kl_mean_nats,
      c.mse_mean,
      c.cosine_mean,
      c.top1_agreement,
      c.golden_accuracy,
      c.compressed_accuracy,
      1,
    ],
    ...doc.slices.flatMap((s) =>
      s.points.map((p) => [
        s.name,
        p.severity,
        p.value,
        p.kl_mean_nats,
        p.mse_mean,
        p.cosine_mean,
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
