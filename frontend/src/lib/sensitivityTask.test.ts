import { describe, expect, it } from "vitest";
import type { Model } from "../api/types";
import { inspectedLayerCount, taskMetricLabel, taskScanCost } from "./sensitivityTask";

const shape = { task: "detection", rankBy: "task.map50_drop", layers: 12, configs: 2, samples: 256, allBut: false };

describe("taskScanCost", () => {
  it("states the whole-model passes a task ranking costs before launch", () => {
    expect(taskScanCost(shape)).toBe(
      "Ranking by mAP@.5 drop runs the whole model for each of 24 cells (12 layers × 2 configurations): " +
        "≈ 24 forward passes of 256 samples, instead of reusing the golden prefix.",
    );
  });

  it("doubles the cells with the all-but view and names a task scored without a ranking", () => {
    const text = taskScanCost({ ...shape, task: "segmentation", rankBy: "", allBut: true, samples: 1 });
    expect(text).toBe(
      "Scoring every cell on task 'segmentation' runs the whole model for each of 48 cells " +
        "(12 layers × 2 configurations × 2 views): ≈ 48 forward passes of 1 sample, instead of reusing the golden prefix.",
    );
  });

  it("says nothing for a scan without a task, and why the count is missing before the inspection", () => {
    expect(taskScanCost({ ...shape, task: "auto", rankBy: "" })).toBeNull();
    const text = taskScanCost({ ...shape, layers: null, samples: null }) ?? "";
    expect(text).toContain("for each layer × 2 configurations");
    expect(text).toContain("known once its inspection has finished");
  });
});

describe("the scan's task words", () => {
  it("labels a metric as the report's card does, with or without its prefix", () => {
    expect(taskMetricLabel("map50_drop")).toBe("mAP@.5 drop");
    expect(taskMetricLabel("task.map50_drop")).toBe("mAP@.5 drop");
  });

  it("counts the layers the model's inspection found, none before it", () => {
    const model = (inspection: unknown) => ({ inspection }) as unknown as Model;
    expect(inspectedLayerCount(model({ layers: [{ name: "a" }, { name: "b" }, { name: "c" }] }))).toBe(3);
    expect(inspectedLayerCount(model(null))).toBeNull();
    expect(inspectedLayerCount(undefined)).toBeNull();
  });
});
