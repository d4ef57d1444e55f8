import { describe, expect, it } from "vitest";
import { taskScoreRows, type ClassificationTask } from "./taskScores";

const scores = (accuracy: number, f1: number) => ({
  n_samples: 10,
  accuracy,
  precision_macro: f1,
  recall_macro: f1,
  f1_macro: f1,
  precision_weighted: f1,
  recall_weighted: f1,
  f1_weighted: f1,
  per_class: [],
});

const borderline = { fraction: 0.1, n: 1, margin_max: 0.2, top1_agreement: 0.5, top1_agreement_rest: 0.9 };

describe("taskScoreRows", () => {
  it("lists each model against the labels, then the label-free row", () => {
    const task: ClassificationTask = {
      name: "classification",
      against_labels: {
        golden: scores(0.9, 0.8),
        compressed: scores(0.7, 0.6),
        delta: { accuracy: -0.2, precision_macro: -0.2, recall_macro: -0.2, f1_macro: -0.2, f1_weighted: -0.2 },
      },
      against_golden: scores(0.75, 0.7),
      borderline,
    };
    expect(taskScoreRows(task).map((r) => [r.label, r.accuracy, r.f1Macro])).toEqual([
      ["Golden vs labels", 0.9, 0.8],
      ["Compressed vs labels", 0.7, 0.6],
      ["Compressed vs golden (label-free)", 0.75, 0.7],
    ]);
  });

  it("without labels shows only the label-free row", () => {
    const task: ClassificationTask = {
      name: "classification",
      against_labels: null,
      against_golden: scores(0.75, 0.7),
      borderline,
    };
    expect(taskScoreRows(task).map((r) => r.label)).toEqual(["Compressed vs golden (label-free)"]);
  });
});
