// The per-task breakdowns under the report's metric cards (issue 30): what a single number hides. Pure data
// shaping here (tested in taskBreakdown.test.ts); TaskBreakdown.tsx draws it.
import type { OutputMetrics } from "../api/types";

type TensorTask = NonNullable<Extract<OutputMetrics, { kind: "tensor" }>["task"]>;
export type DetectionTask = Extract<TensorTask, { name: "detection" }>;
export type SegmentationTask = Extract<TensorTask, { name: "segmentation" }>;
export type CtcTask = Extract<TensorTask, { name: "ctc" }>;
export type LanguageModelTask = Extract<TensorTask, { name: "language_model" }>;
type DetectionScores = DetectionTask["against_golden"];
type CtcScores = CtcTask["against_golden"];

/** The 101 recall points COCO interpolates precision at (0, 0.01, ..., 1). */
export const RECALL_POINTS: number[] = Array.from({ length: 101 }, (_, i) => i / 100);

export interface Series {
  name: string;
  x: (number | string)[];
  y: (number | null)[];
}

export interface PrCurves {
  classIndex: number;
  nTruth: number;
  golden: (number | null)[];
  compressed: (number | null)[];
  /** Golden minus compressed AP@.5, the gap the curves show (null when either is undefined). */
  ap50Drop: number | null;
}

/** Both models' scores against the labels when the dataset has them, else the compressed model's against
 * the golden detections (the golden model is then its own truth: no curve of its own). */
export function detectionScores(task: DetectionTask): { golden: DetectionScores | null; compressed: DetectionScores } {
  const labels = task.against_labels;
  return labels
    ? { golden: labels.golden, compressed: labels.compressed }
    : { golden: null, compressed: task.against_golden };
}

/** Per-class AP@.5 of both models, classes in index order (labels: "class 3"). */
export function classApSeries(task: DetectionTask): Series[] {
  const { golden, compressed } = detectionScores(task);
  const classes = [...new Set([...(golden?.per_class ?? []), ...compressed.per_class].map((c) => c.class_index))].sort(
    (a, b) => a - b,
  );
  const ap = (scores: DetectionScores | null) => {
    const by = new Map((scores?.per_class ?? []).map((c) => [c.class_index, c.ap50 ?? null]));
    return classes.map((k) => by.get(k) ?? null);
  };
  const x = classes.map((k) => `class ${k.toString()}`);
  const compressedName = golden ? "compressed" : "compressed vs golden detections";
  return [...(golden ? [{ name: "golden", x, y: ap(golden) }] : []), { name: compressedName, x, y: ap(compressed) }];
}

/** The PR curves at IoU .5 of the classes where the two models differ most (by AP@.5), worst first. */
export function worstPrCurves(task: DetectionTask, limit = 4): PrCurves[] {
  const { golden, compressed } = detectionScores(task);
  if (!golden) return [];
  const compressedBy = new Map(compressed.per_class.map((c) => [c.class_index, c]));
  const curves: PrCurves[] = [];
  for (const g of golden.per_class) {
    const c = compressedBy.get(g.class_index);
    if (!g.pr50 || !c?.pr50) continue;
    const drop = g.ap50 != null && c.ap50 != null ? g.ap50 - c.ap50 : null;
    curves.push({ classIndex: g.class_index, nTruth: g.n_truth, golden: g.pr50, compressed: c.pr50, ap50Drop: drop });
  }
  return curves.sort((a, b) => Math.abs(b.ap50Drop ?? 0) - Math.abs(a.ap50Drop ?? 0)).slice(0, limit);
}

/** Per-class IoU of both models against the masks (or the compressed model's against the golden label maps). */
export function classIouSeries(task: SegmentationTask): Series[] {
  const masks = task.against_masks;
  const sets = masks
    ? [
        { name: "golden", values: masks.golden.per_class_iou },
        { name: "compressed", values: masks.compressed.per_class_iou },
      ]
    : [{ name: "compressed vs golden maps", values: task.against_golden.per_class_iou }];
  const n = Math.max(...sets.map((s) => s.values.length), 0);
  const x = Array.from({ length: n }, (_, k) => `class ${k.toString()}`);
  return sets.map((s) => ({ name: s.name, x, y: x.map((_, k) => s.values[k] ?? null) }));
}

export interface WerParts {
  model: string;
  substitutions: number;
  deletions: number;
  insertions: number;
  /** Each part as a share of the reference words, so the stacked bar's height is the WER. */
  rates: { substitutions: number; deletions: number; insertions: number } | null;
}

function parts(model: string, s: CtcScores): WerParts {
  const n = s.n_reference_words;
  return {
    model,
    substitutions: s.substitutions,
    deletions: s.deletions,
    insertions: s.insertions,
    rates:
      n > 0 ? { substitutions: s.substitutions / n, deletions: s.deletions / n, insertions: s.insertions / n } : null,
  };
}

/** WER split into substitutions, deletions and insertions: both models against the transcripts, and the
 * compressed model against the golden transcripts. */
export function werBreakdown(task: CtcTask): WerParts[] {
  const t = task.against_transcripts;
  return [
    ...(t ? [parts("golden vs transcripts", t.golden), parts("compressed vs transcripts", t.compressed)] : []),
    parts("compressed vs golden", task.against_golden),
  ];
}

/** Mean KL by position index, positions with no kept token left out (gaps). */
export function klByPosition(task: LanguageModelTask): Series {
  return { name: "KL(golden‖compressed)", x: task.kl_by_position.map((_, i) => i), y: task.kl_by_position };
}
