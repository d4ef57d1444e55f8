// The cards of the task blocks of a tensor output (image, segmentation, CTC, detection, signal, language model:
// one per task adapter in worker/engine/tasks), in the order the report shows them.
import type { OutputMetrics } from "../api/types";
import type { MetricDef, Value } from "./metricDef";

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

export const TENSOR_TASK_METRICS: readonly MetricDef[] = [
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
];
