import { describe, expect, it } from "vitest";
import type { Sample } from "../api/types";
import { hiddenColumns, taskColumns } from "./sampleColumns";

const row = (extra: Partial<Sample>): Sample =>
  ({
    sample_index: 0,
    kl: null,
    cosine: 0.9,
    mse: 0.1,
    sqnr_db: 20,
    sqnr_db_infinite: false,
    golden_class: null,
    compressed_class: null,
    label: null,
    top1_match: null,
    flagged: false,
    finite: true,
    ...extra,
  }) as Sample;

describe("the per-sample table's columns", () => {
  it("leads with the task values, the per-sample change first", () => {
    const rows = [
      row({ task_values: { wer_golden: 0.1, wer_compressed: 0.2, wer_delta: 0.1 } }),
      row({ task_values: { cer: 0 } }),
    ];
    expect(taskColumns(rows)).toEqual(["wer_delta", "wer_golden", "wer_compressed", "cer"]);
  });

  it("drops the columns a task's outputs leave empty, and only on a task job", () => {
    const task = [row({ task_values: { iou: 0.5 } }), row({ task_values: { iou: 0.7 }, label: 3 })];
    expect([...hiddenColumns(task)].sort()).toEqual(["compressed_class", "golden_class", "kl"]);
    const classifier = [row({ kl: 0.1, golden_class: 1, compressed_class: 1 })];
    expect(hiddenColumns(classifier).size).toBe(0);
    expect(taskColumns(classifier)).toEqual([]);
  });
});
