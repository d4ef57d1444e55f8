import { describe, expect, it } from "vitest";
import {
  classApSeries,
  classIouSeries,
  klByPosition,
  werBreakdown,
  worstPrCurves,
  type CtcTask,
  type DetectionTask,
  type SegmentationTask,
} from "./taskBreakdown";

const curve = (p: number) => Array.from({ length: 101 }, (_, i) => (i <= 80 ? p : null));

const scores = (per: [number, number | null][]): DetectionTask["against_golden"] => ({
  map: null,
  map50: null,
  map75: null,
  map_small: null,
  map_medium: null,
  map_large: null,
  ar100: null,
  n_truth: 10,
  n_detections: 10,
  per_class: per.map(([k, ap50]) => ({
    class_index: k,
    n_truth: 5,
    ap: ap50,
    ap50,
    pr50: ap50 === null ? null : curve(ap50),
  })),
});

function detection(labels: boolean): DetectionTask {
  return {
    name: "detection",
    against_golden: scores([
      [0, 0.9],
      [2, 0.5],
    ]),
    against_labels: labels
      ? {
          golden: scores([
            [0, 0.8],
            [1, 0.7],
            [2, 0.9],
          ]),
          compressed: scores([
            [0, 0.78],
            [1, 0.2],
            [2, 0.6],
          ]),
        }
      : null,
  } as DetectionTask;
}

describe("detection breakdown", () => {
  it("puts both models' AP@.5 per class side by side, classes in index order", () => {
    expect(classApSeries(detection(true))).toEqual([
      { name: "golden", x: ["class 0", "class 1", "class 2"], y: [0.8, 0.7, 0.9] },
      { name: "compressed", x: ["class 0", "class 1", "class 2"], y: [0.78, 0.2, 0.6] },
    ]);
  });

  it("without labels shows the compressed model against the golden detections only", () => {
    const series = classApSeries(detection(false));
    expect(series.map((s) => s.name)).toEqual(["compressed vs golden detections"]);
    expect(series[0]?.y).toEqual([0.9, 0.5]);
    expect(worstPrCurves(detection(false))).toEqual([]);
  });

  it("picks the PR curves of the classes whose AP@.5 moved most", () => {
    const curves = worstPrCurves(detection(true), 2);
    expect(curves.map((c) => c.classIndex)).toEqual([1, 2]);
    expect(curves[0]?.ap50Drop).toBeCloseTo(0.5);
    expect(curves[0]?.golden).toHaveLength(101);
  });
});

describe("segmentation breakdown", () => {
  it("pads a shorter per-class list with gaps", () => {
    const task = {
      name: "segmentation",
      against_golden: { per_class_iou: [1, 1] },
      against_masks: {
        golden: { per_class_iou: [0.9, 0.8, 0.7] },
        compressed: { per_class_iou: [0.85, null] },
      },
    } as unknown as SegmentationTask;
    expect(classIouSeries(task)).toEqual([
      { name: "golden", x: ["class 0", "class 1", "class 2"], y: [0.9, 0.8, 0.7] },
      { name: "compressed", x: ["class 0", "class 1", "class 2"], y: [0.85, null, null] },
    ]);
  });
});

describe("WER breakdown", () => {
  it("splits the errors into shares of the reference words that add up to the WER", () => {
    const s = (sub: number, del: number, ins: number, n: number) => ({
      substitutions: sub,
      deletions: del,
      insertions: ins,
      n_reference_words: n,
      wer: (sub + del + ins) / n,
    });
    const task = {
      name: "ctc",
      against_golden: s(1, 0, 1, 20),
      against_transcripts: { golden: s(2, 1, 0, 30), compressed: s(4, 2, 3, 30) },
    } as unknown as CtcTask;
    const rows = werBreakdown(task);
    expect(rows.map((r) => r.model)).toEqual([
      "golden vs transcripts",
      "compressed vs transcripts",
      "compressed vs golden",
    ]);
    const r = rows[1]?.rates;
    expect(r && r.substitutions + r.deletions + r.insertions).toBeCloseTo(9 / 30);
    const empty = { ...task, against_golden: s(0, 0, 0, 0), against_transcripts: null } as unknown as CtcTask;
    expect(werBreakdown(empty)[0]?.rates).toBeNull();
  });
});

describe("KL by position", () => {
  it("keeps gaps where no token was kept", () => {
    const s = klByPosition({ name: "language_model", kl_by_position: [0.1, null, 0.3] } as never);
    expect(s.x).toEqual([0, 1, 2]);
    expect(s.y).toEqual([0.1, null, 0.3]);
  });
});
