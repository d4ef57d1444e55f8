import { describe, expect, it } from "vitest";
import { NO_BOUNDS } from "./sweepBounds";
import { DEFAULT_SWEEP_QUERY } from "./sweepQuery";
import {
  launchAxes,
  launchBounds,
  launchTaskBound,
  parseTaskOptions,
  sweepTasks,
  taskFrontier,
  taskMetrics,
} from "./sweepTask";

const schema = {
  properties: {
    task: { enum: ["auto", "segmentation", "ctc"] },
    objectives: {
      "x-task-metrics": {
        segmentation: { "task.miou_drop": "min", "task.miou_vs_golden": "max", "task.odd": "sideways" },
        ctc: { "task.wer_delta": "min" },
      },
    },
  },
};

describe("a sweep's task", () => {
  it("reads the tasks and each task's metrics with the API's directions", () => {
    expect(sweepTasks(schema)).toEqual(["auto", "segmentation", "ctc"]);
    expect(taskMetrics(schema)).toEqual({
      segmentation: { "task.miou_drop": "min", "task.miou_vs_golden": "max" },
      ctc: { "task.wer_delta": "min" },
    });
    expect(taskMetrics({ properties: {} })).toEqual({});
  });

  it("parses flat task options and refuses nested ones", () => {
    expect(parseTaskOptions("")).toEqual({});
    expect(parseTaskOptions('{"ignore_index": 255, "vocabulary": ["a", "b"]}')).toEqual({
      ignore_index: 255,
      vocabulary: ["a", "b"],
    });
    expect(parseTaskOptions('{"a": {"b": 1}}')).toMatch(/flat/);
    expect(parseTaskOptions("[1]")).toMatch(/JSON object/);
  });

  it("bounds the acceptable side of the metric", () => {
    expect(taskFrontier("task.miou_drop", "min", "0.005")).toEqual({
      objectives: ["task.miou_drop:min", "size_bytes:min"],
      bounds: ["task.miou_drop<=0.005"],
    });
    expect(taskFrontier("task.miou_vs_golden", "max", "0.99")).toMatchObject({ bounds: ["task.miou_vs_golden>=0.99"] });
    expect(taskFrontier("task.miou_drop", "min", "")).toMatchObject({ bounds: [] });
    expect(taskFrontier("task.miou_drop", "min", "abc")).toMatch(/number/);
  });
});

describe("the axes a sweep launched with", () => {
  const empty = { x: null, y: null, xDir: null, yDir: null };
  it("open the page when the URL names none", () => {
    expect(launchAxes(empty, { objectives: ["task.miou_drop:min", "size_bytes:min"] })).toEqual({
      x: "size_bytes",
      y: "task.miou_drop",
      xDir: "min",
      yDir: "min",
    });
    expect(launchAxes(empty, {})).toEqual(empty);
    const chosen = { ...empty, x: "bops" };
    expect(launchAxes(chosen, { objectives: ["task.miou_drop:min"] })).toBe(chosen);
  });
});

describe("the bounds a sweep launched with", () => {
  it("apply where the points measured the objective; a task bound is the page's own", () => {
    const params = { bounds: ["task.miou_drop<=0.05", "kl_mean<=0.01", "top1_agreement>=0.9", 3] };
    expect(launchBounds(params, ["task.miou_drop", "kl_mean", "size_bytes"])).toEqual(["kl_mean<=0.01"]);
    expect(launchBounds({}, ["task.miou_drop"])).toEqual([]);
  });

  it("set the page's task bound where the URL names no task metric, so that the page can move or clear it", () => {
    const query = { ...DEFAULT_SWEEP_QUERY };
    const launched = launchTaskBound(query, { bounds: ["kl_mean<=1", "task.miou_vs_golden>=0.9"] });
    expect(launched.taskMetric).toBe("task.miou_vs_golden");
    expect(launched.bounds).toEqual({ ...NO_BOUNDS, taskLimit: 0.9 });
    // cleared on the page: the metric stays in the URL with no limit, and the launch's bound is not put back
    const cleared = { ...query, taskMetric: "task.miou_vs_golden" };
    expect(launchTaskBound(cleared, { bounds: ["task.miou_vs_golden>=0.9"] })).toBe(cleared);
    expect(launchTaskBound(query, { bounds: ["task.x<=oops"] })).toBe(query);
    expect(launchTaskBound(query, {})).toBe(query);
  });
});
