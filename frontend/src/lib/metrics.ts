// The metric cards of a fidelity report: which numbers of an output's summary to show, what each means,
// and which way is better. Only metrics present in the summary become cards.
import type { ClassificationMetrics, OutputMetrics } from "../api/types";
import { formatNumber, formatPercent } from "./format";

export type Direction = "lower" | "higher" | "closer to 0";

type Value = number | null | undefined;

/** A classification metric: none for the other families. */
const cls =
  (get: (m: ClassificationMetrics) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "classification" ? get(m) : null;

type TensorTask = NonNullable<Extract<OutputMetrics, { kind: "tensor" }>["task"]>;
type ImageTask = Extract<TensorTask, { name: "image" }>;
type SegmentationTask = Extract<TensorTask, { name: "segmentation" }>;
type CtcTask = Extract<TensorTask, { name: "ctc" }>;
type DetectionTask = Extract<TensorTask, { name: "detection" }>;
type LanguageModelTask = Extract<TensorTask, { name: "language_model" }>;
type SignalTask = Extract<TensorTask, { name: "signal" }>;

/** A score of the image task: none for other outputs. */
const image =
  (get: (t: ImageTask) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "tensor" && m.task?.name === "image" ? get(m.task) : null;

/** A score of the segmentation task: none for other outputs. */
const seg =
  (get: (t: SegmentationTask) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "tensor" && m.task?.name === "segmentation" ? get(m.task) : null;

/** A score of the speech (CTC) task: none for other outputs. */
const ctc =
  (get: (t: CtcTask) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "tensor" && m.task?.name === "ctc" ? get(m.task) : null;

/** A score of the signal task: none for other outputs. */
const signal =
  (get: (t: SignalTask) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "tensor" && m.task?.name === "signal" ? get(m.task) : null;

/** A score of the language-model task: none for other outputs. */
const lm =
  (get: (t: LanguageModelTask) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "tensor" && m.task?.name === "language_model" ? get(m.task) : null;

/** A score of the detection task: none for other outputs. */
const detection =
  (get: (t: DetectionTask) => Value) =>
  (m: OutputMetrics): Value =>
    m.kind === "tensor" && m.task?.name === "detection" ? get(m.task) : null;

interface MetricDef {
  /** Dotted path in the output's metrics (the card's key, and its name in the API's documents). */
  path: string;
  value: (metrics: OutputMetrics) => Value;
  label: string;
  explanation: string;
  direction?: Direction;
  unit: "nats" | "fraction" | "dB" | "pp" | "count" | "";
  /** Significant digits (default 4); cosine similarities need more to differ from 1. */
  digits?: number;
  /** Shown first; the others sit under "more metrics". */
  headline?: boolean;
}

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
  {
    path: "task.psnr_db_vs_golden",
    value: image((t) => t.psnr_db_vs_golden),
    label: "PSNR vs golden",
    unit: "dB",
    direction: "higher",
    headline: true,
    explanation: "Task 'image': mean PSNR of the compressed pictures against the golden model's.",
  },
  {
    path: "task.ssim_vs_golden",
    value: image((t) => t.ssim_vs_golden),
    label: "SSIM vs golden",
    unit: "",
    direction: "higher",
    headline: true,
    explanation: "Task 'image': mean structural similarity of the compressed pictures to the golden model's.",
  },
  {
    path: "task.psnr_drop_db",
    value: image((t) => t.psnr_drop_db),
    label: "PSNR drop",
    unit: "dB",
    direction: "lower",
    headline: true,
    explanation: "Task 'image': golden minus compressed mean PSNR against the dataset's reference pictures.",
  },
  {
    path: "task.ssim_drop",
    value: image((t) => t.ssim_drop),
    label: "SSIM drop",
    unit: "",
    direction: "lower",
    explanation: "Task 'image': golden minus compressed mean SSIM against the dataset's reference pictures.",
  },
  {
    path: "task.miou_vs_golden",
    value: seg((t) => t.miou_vs_golden),
    label: "mIoU vs golden",
    unit: "fraction",
    direction: "higher",
    headline: true,
    explanation:
      "Task 'segmentation', label-free: mean IoU of the compressed label maps with the golden model's as the truth.",
  },
  {
    path: "task.pixel_agreement",
    value: seg((t) => t.pixel_agreement),
    label: "Pixel agreement",
    unit: "fraction",
    direction: "higher",
    headline: true,
    explanation: "Task 'segmentation': share of pixels where both models predict the same class.",
  },
  {
    path: "task.boundary_f1_vs_golden",
    value: seg((t) => t.boundary_f1_vs_golden),
    label: "Boundary F1 vs golden",
    unit: "fraction",
    direction: "higher",
    explanation:
      "Task 'segmentation', label-free: F1 of the compressed model's class boundaries against the golden model's, within the job's pixel tolerance.",
  },
  {
    path: "task.miou_drop",
    value: seg((t) => t.miou_drop),
    label: "mIoU drop",
    unit: "",
    direction: "lower",
    headline: true,
    explanation:
      "Task 'segmentation': golden minus compressed mean IoU against the dataset's masks, as a fraction (0.01 = one IoU point).",
  },
  {
    path: "task.boundary_f1_drop",
    value: seg((t) => t.boundary_f1_drop),
    label: "Boundary F1 drop",
    unit: "",
    direction: "lower",
    explanation: "Task 'segmentation': golden minus compressed boundary F1 against the dataset's masks.",
  },
  {
    path: "task.wer_vs_golden",
    value: ctc((t) => t.wer_vs_golden),
    label: "WER vs golden",
    unit: "fraction",
    direction: "lower",
    headline: true,
    explanation:
      "Task 'ctc', label-free: word error rate of the compressed transcripts with the golden model's as the references.",
  },
  {
    path: "task.cer_vs_golden",
    value: ctc((t) => t.cer_vs_golden),
    label: "CER vs golden",
    unit: "fraction",
    direction: "lower",
    explanation:
      "Task 'ctc', label-free: character error rate of the compressed transcripts against the golden model's.",
  },
  {
    path: "task.exact_match_vs_golden",
    value: ctc((t) => t.exact_match_vs_golden),
    label: "Same transcript",
    unit: "fraction",
    direction: "higher",
    explanation: "Task 'ctc': share of utterances both models transcribe identically.",
  },
  {
    path: "task.wer_delta",
    value: ctc((t) => t.wer_delta),
    label: "WER increase",
    unit: "",
    direction: "lower",
    headline: true,
    explanation:
      "Task 'ctc': compressed minus golden word error rate against the dataset's transcripts, as a fraction (0.01 = one WER point).",
  },
  {
    path: "task.cer_delta",
    value: ctc((t) => t.cer_delta),
    label: "CER increase",
    unit: "",
    direction: "lower",
    explanation: "Task 'ctc': compressed minus golden character error rate against the dataset's transcripts.",
  },
  {
    path: "task.map50_drop",
    value: detection((t) => t.map50_drop),
    label: "mAP@.5 drop",
    unit: "pp",
    direction: "lower",
    headline: true,
    explanation:
      "Task 'detection': golden minus compressed COCO mAP at IoU 0.5 against the dataset's boxes, in points.",
  },
  {
    path: "task.map_drop",
    value: detection((t) => t.map_drop),
    label: "mAP drop",
    unit: "pp",
    direction: "lower",
    headline: true,
    explanation: "Task 'detection': golden minus compressed COCO mAP@[.5:.95] against the dataset's boxes, in points.",
  },
  {
    path: "task.map50_vs_golden",
    value: detection((t) => t.map50_vs_golden),
    label: "mAP@.5 vs golden",
    unit: "fraction",
    direction: "higher",
    headline: true,
    explanation:
      "Task 'detection', label-free: COCO mAP at IoU 0.5 of the compressed detections, the golden model's as the truth.",
  },
  {
    path: "task.map_vs_golden",
    value: detection((t) => t.map_vs_golden),
    label: "mAP vs golden",
    unit: "fraction",
    direction: "higher",
    explanation:
      "Task 'detection', label-free: COCO mAP@[.5:.95] of the compressed detections, the golden model's as the truth.",
  },
  {
    path: "task.golden_map50",
    value: detection((t) => t.golden_map50),
    label: "Golden mAP@.5",
    unit: "fraction",
    direction: "higher",
    explanation: "Task 'detection': the golden model's COCO mAP at IoU 0.5 against the dataset's boxes.",
  },
  {
    path: "task.compressed_map50",
    value: detection((t) => t.compressed_map50),
    label: "Compressed mAP@.5",
    unit: "fraction",
    direction: "higher",
    explanation: "Task 'detection': the compressed model's COCO mAP at IoU 0.5 against the dataset's boxes.",
  },
  {
    path: "task.invalid_boxes.compressed",
    value: detection((t) => t.invalid_boxes.compressed),
    label: "Invalid boxes",
    unit: "count",
    direction: "lower",
    explanation: "Task 'detection': the compressed model's boxes dropped as NaN/Inf or without area inside the image.",
  },
  {
    path: "task.si_sdr_db_vs_golden",
    value: signal((t) => t.si_sdr_db_vs_golden),
    label: "SI-SDR vs golden",
    unit: "dB",
    direction: "higher",
    headline: true,
    explanation:
      "Task 'signal', label-free: scale-invariant signal-to-distortion ratio of the compressed signals with the golden model's as the reference.",
  },
  {
    path: "task.si_sdr_drop_db",
    value: signal((t) => t.si_sdr_drop_db),
    label: "SI-SDR drop",
    unit: "dB",
    direction: "lower",
    headline: true,
    explanation: "Task 'signal': golden minus compressed SI-SDR against the dataset's clean signals.",
  },
  {
    path: "task.snr_drop_db",
    value: signal((t) => t.snr_drop_db),
    label: "SNR drop",
    unit: "dB",
    direction: "lower",
    explanation: "Task 'signal': golden minus compressed SNR against the dataset's clean signals.",
  },
  {
    path: "task.ppl_delta",
    value: lm((t) => t.ppl_delta),
    label: "Perplexity increase",
    unit: "",
    direction: "lower",
    headline: true,
    explanation:
      "Task 'language_model': compressed minus golden perplexity of the dataset's text (teacher-forced next tokens).",
  },
  {
    path: "task.kl_mean",
    value: lm((t) => t.kl_mean),
    label: "Next-token KL",
    unit: "nats",
    direction: "lower",
    headline: true,
    explanation:
      "Task 'language_model': mean KL(golden ‖ compressed) of the next-token distributions over the whole vocabulary, per token.",
  },
  {
    path: "task.top1_agreement",
    value: lm((t) => t.top1_agreement),
    label: "Next-token agreement",
    unit: "fraction",
    direction: "higher",
    headline: true,
    explanation: "Task 'language_model': share of positions where both models' most likely next token is the same.",
  },
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
