// The metric cards of a fidelity report: which numbers of an output's summary to show, what each means,
// and which way is better. Only metrics present in the summary become cards.
import type { ClassificationMetrics, OutputMetrics } from "../api/types";
import { formatNumber, formatPercent } from "./format";
import type { Direction, MetricDef, Value } from "./metricDef";
import { TENSOR_TASK_METRICS } from "./taskMetricCards";

export type { Direction } from "./metricDef";

/** A classification metric: none for the other families. */
const cls =
  (get: (m: ClassificationMetrics) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "classification" ? get(m) : null;

export interface MetricCard {
  path: string;
  label: string;
  value: string;
  explanation: string;
  direction?: Direction;
  headline: boolean;
}

const METRICS: readonly MetricDef[] = [
  {
    path: "kl_mean_nats",
    value: cls((m) => m.kl_mean_nats),
    label: "KL(P‖Q) mean",
    unit: "nats",
    direction: "lower",
    headline: true,
    explanation: "Information lost when the compressed model's distribution Q stands in for the golden P.",
  },
  {
    path: "kl_reverse_mean_nats",
    value: cls((m) => m.kl_reverse_mean_nats),
    label: "KL(Q‖P) mean",
    unit: "nats",
    direction: "lower",
    explanation: "Reverse KL: penalises classes the compressed model invents.",
  },
  {
    path: "js_mean_nats",
    value: cls((m) => m.js_mean_nats),
    label: "Jensen-Shannon mean",
    unit: "nats",
    direction: "lower",
    headline: true,
    explanation: "Symmetric, bounded divergence between the two distributions (at most ln 2).",
  },
  {
    path: "tv_mean",
    value: cls((m) => m.tv_mean),
    label: "Total variation mean",
    unit: "",
    direction: "lower",
    explanation: "Largest difference in probability the two models give to any set of classes.",
  },
  {
    path: "top1_match",
    value: cls((m) => m.top1_match),
    label: "Top-1 match",
    unit: "fraction",
    direction: "higher",
    headline: true,
    explanation: "Share of samples where both models predict the same class.",
  },
  {
    path: "topk_agreement",
    value: cls((m) => m.topk_agreement),
    label: "Top-k agreement",
    unit: "fraction",
    direction: "higher",
    headline: true,
    explanation: "Share of samples whose golden top-1 class is in the compressed model's top k.",
  },
  {
    path: "topk_overlap",
    value: cls((m) => m.topk_overlap),
    label: "Top-k overlap",
    unit: "fraction",
    direction: "higher",
    explanation: "Mean share of the top-k classes the two models have in common.",
  },
  {
    path: "label_flips.count",
    value: cls((m) => m.label_flips?.count),
    label: "Top-1 flips",
    unit: "count",
    direction: "lower",
    headline: true,
    explanation: "Samples whose predicted class changed under compression.",
  },
  {
    path: "labels.top1_accuracy_drop_pp",
    value: cls((m) => m.labels?.top1_accuracy_drop_pp),
    label: "Accuracy drop",
    unit: "pp",
    direction: "lower",
    headline: true,
    explanation: "Golden minus compressed top-1 accuracy on the labels, in percentage points.",
  },
  {
    path: "task.f1_macro_drop_pp",
    value: cls((m) => m.task?.f1_macro_drop_pp),
    label: "Macro F1 drop",
    unit: "pp",
    direction: "lower",
    explanation: "Golden minus compressed macro F1 on the labels, in percentage points.",
  },
  {
    path: "task.f1_macro_vs_golden",
    value: cls((m) => m.task?.f1_macro_vs_golden),
    label: "Macro F1 vs golden",
    unit: "",
    direction: "higher",
    explanation: "Label-free: macro F1 of the compressed model with the golden model's predictions as the truth.",
  },
  {
    path: "task.borderline_agreement",
    value: cls((m) => m.task?.borderline_agreement),
    label: "Borderline agreement",
    unit: "fraction",
    direction: "higher",
    explanation: "Top-1 agreement on the golden model's 10 % lowest-margin samples, where compression flips first.",
  },
  ...TENSOR_TASK_METRICS,
  {
    path: "labels.golden_top1_accuracy",
    value: cls((m) => m.labels?.golden_top1_accuracy),
    label: "Golden accuracy",
    unit: "fraction",
    direction: "higher",
    explanation: "Top-1 accuracy of the golden model on the dataset's labels.",
  },
  {
    path: "labels.compressed_top1_accuracy",
    value: cls((m) => m.labels?.compressed_top1_accuracy),
    label: "Compressed accuracy",
    unit: "fraction",
    direction: "higher",
    explanation: "Top-1 accuracy of the compressed model on the dataset's labels.",
  },
  {
    path: "labels.calibration.ece_shift",
    value: cls((m) => m.labels?.calibration?.ece_shift),
    label: "ECE shift",
    unit: "",
    direction: "lower",
    headline: true,
    explanation: "Expected calibration error of the compressed model minus the golden model's.",
  },
  {
    path: "confidence_shift",
    value: cls((m) => m.confidence_shift),
    label: "Confidence shift",
    unit: "",
    direction: "closer to 0",
    explanation: "Mean top-1 probability of the compressed model minus the golden model's.",
  },
  {
    path: "sqnr_db",
    value: (m) => m.sqnr_db,
    label: "SQNR",
    unit: "dB",
    direction: "higher",
    headline: true,
    explanation: "Signal-to-quantization-noise ratio of the raw outputs.",
  },
  {
    path: "cosine_mean",
    value: (m) => m.cosine_mean,
    label: "Cosine similarity mean",
    unit: "",
    direction: "higher",
    digits: 6,
    headline: true,
    explanation: "Mean cosine similarity between the two models' output vectors.",
  },
  {
    path: "cosine_min",
    value: (m) => m.cosine_min,
    label: "Cosine similarity min",
    unit: "",
    direction: "higher",
    digits: 6,
    explanation: "The least similar sample's cosine similarity.",
  },
  {
    path: "mse",
    value: (m) => m.mse,
    label: "MSE",
    unit: "",
    direction: "lower",
    explanation: "Mean squared error between the raw outputs.",
  },
  {
    path: "mae",
    value: (m) => m.mae,
    label: "MAE",
    unit: "",
    direction: "lower",
    explanation: "Mean absolute error between the raw outputs.",
  },
  {
    path: "max_abs_err",
    value: (m) => m.max_abs_err,
    label: "Max abs error",
    unit: "",
    direction: "lower",
    explanation: "Largest absolute difference in any output element.",
  },
  {
    path: "r2",
    value: (m) => (m.kind === "regression" ? m.r2 : null),
    label: "R²",
    unit: "",
    direction: "higher",
    headline: true,
    explanation: "How much of the golden outputs' variance the compressed outputs explain.",
  },
  {
    path: "nearest_neighbour_agreement",
    value: (m) => (m.kind === "embedding" ? m.nearest_neighbour_agreement : null),
    label: "Nearest-neighbour agreement",
    unit: "fraction",
    direction: "higher",
    headline: true,
    explanation: "Share of samples whose nearest neighbour (cosine) is the same in both embedding spaces.",
  },
  {
    path: "cross_entropy_mean_nats",
    value: cls((m) => m.cross_entropy_mean_nats),
    label: "Cross-entropy mean",
    unit: "nats",
    explanation: "H(P, Q) = entropy of P + KL(P‖Q); for reference next to the golden entropy.",
  },
  {
    path: "entropy_golden_mean_nats",
    value: cls((m) => m.entropy_golden_mean_nats),
    label: "Golden entropy mean",
    unit: "nats",
    explanation: "How uncertain the golden model is on its own; the scale KL is measured against.",
  },
];

function formatValue(value: number, { unit, digits }: MetricDef): string {
  switch (unit) {
    case "fraction":
      return formatPercent(value);
    case "nats":
      return `${formatNumber(value, digits)} nats`;
    case "dB":
      return `${formatNumber(value, digits)} dB`;
    case "pp":
      return `${formatNumber(value, digits)} pp`;
    case "count":
      return value.toLocaleString("en-US");
    case "":
      return formatNumber(value, digits);
  }
}

export function metricCards(metrics: OutputMetrics): MetricCard[] {
  const cards: MetricCard[] = [];
  for (const def of METRICS) {
    const raw = def.value(metrics);
    let value: string | null = typeof raw === "number" ? formatValue(raw, def) : null;
    if (def.path === "sqnr_db" && metrics.sqnr_db_infinite) value = "∞ (identical)";
    if (value === null) continue;
    const { path, label, explanation, direction } = def;
    cards.push({ path, label, value, explanation, direction, headline: def.headline ?? false });
  }
  return cards;
}
