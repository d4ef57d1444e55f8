import { describe, expect, it } from "vitest";
import { taskColumns, taskValue } from "./taskHeadline";

const run = (
  task: { name: string; metrics: { metric: string; value: number | null; higher_is_better: boolean }[] } | null,
) => ({
  headline: { task },
});

describe("task columns of compared runs", () => {
  const seg = run({
    name: "segmentation",
    metrics: [
      { metric: "miou_vs_golden", value: 0.91, higher_is_better: true },
      { metric: "miou_drop", value: null, higher_is_better: false },
    ],
  });
  const det = run({ name: "detection", metrics: [{ metric: "map50_drop", value: 1.25, higher_is_better: false }] });

  it("lists each task metric with a value once, labelled by its metric card, directed by the API", () => {
    const columns = taskColumns([run(null), seg, det]);
    expect(columns.map((c) => [c.key, c.higherIsBetter])).toEqual([
      ["task.miou_vs_golden", true],
      ["task.map50_drop", false],
    ]);
    expect(columns[0]?.label).not.toBe("task.miou_vs_golden");
  });

  it("reads a run's value, null for another task or an undefined one", () => {
    expect(taskValue(det, "map50_drop")).toBe(1.25);
    expect(taskValue(seg, "map50_drop")).toBeNull();
    expect(taskValue(seg, "miou_drop")).toBeNull();
    expect(taskValue(run(null), "miou_vs_golden")).toBeNull();
  });
});
