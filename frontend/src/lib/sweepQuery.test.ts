import { describe, expect, it } from "vitest";
import { learnTaskDirections } from "./sweepObjectives";
import { DEFAULT_SWEEP_QUERY, formatSweepQuery, parseSweepQuery, resolveView, type SweepQuery } from "./sweepQuery";

const parse = (text: string) => parseSweepQuery(new URLSearchParams(text));

describe("sweep URL state", () => {
  it("round-trips and writes only what differs from the defaults", () => {
    expect(formatSweepQuery(DEFAULT_SWEEP_QUERY)).toBe("");
    const query: SweepQuery = {
      ...DEFAULT_SWEEP_QUERY,
      x: "bops",
      yDir: "max",
      yLog: false,
      bounds: { maxKl: 0.01, minTop1: 0.99, maxSize: null, maxLatency: 0.5, maxMemory: null, taskLimit: null },
      batch: 32,
      point: "4",
      sort: "kl_mean",
      order: "desc",
    };
    const text = formatSweepQuery(query);
    expect(text).toBe(
      "?x=bops&ydir=max&ylog=0&maxkl=0.01&mintop1=0.99&maxlat=0.5&batch=32&point=4&sort=kl_mean&order=desc",
    );
    expect(parse(text.slice(1))).toEqual(query);
    expect(parse("point=abc-1:3").point).toBe("abc-1:3");
  });

  it("ignores values it cannot use", () => {
    expect(parse("x=<b>&xdir=up&xlog=yes&maxkl=lots&mintop1=&batch=0&point=x&sort=a b&order=up")).toEqual(
      DEFAULT_SWEEP_QUERY,
    );
    expect(parse("maxkl=1e-7").bounds.maxKl).toBe(1e-7);
  });
});

describe("the view a page draws", () => {
  const available = ["kl_mean", "top1_agreement", "size_bytes", "latency_p50_ms_b1", "latency_p50_ms_b32"];

  it("defaults to size × KL with their own directions, the smallest timed batch and no bounds", () => {
    const view = resolveView(DEFAULT_SWEEP_QUERY, available);
    expect([view.x, view.y, view.xDir, view.yDir, view.batch]).toEqual(["size_bytes", "kl_mean", "min", "min", 1]);
    expect(view.batches).toEqual([1, 32]);
    expect(view.objectiveParams).toEqual(["size_bytes:min", "kl_mean:min"]);
    expect(view.boundParams).toEqual([]);
  });

  it("takes the URL's axes, directions, batch and bounds when the points have them", () => {
    const view = resolveView(
      {
        ...DEFAULT_SWEEP_QUERY,
        x: "latency_p50_ms_b32",
        y: "top1_agreement",
        yDir: "min",
        batch: 32,
        bounds: { maxKl: 0.01, minTop1: null, maxSize: 4096, maxLatency: 2, maxMemory: null, taskLimit: null },
      },
      available,
    );
    expect(view.objectiveParams).toEqual(["latency_p50_ms_b32:min", "top1_agreement:min"]);
    expect(view.boundParams).toEqual(["kl_mean<=0.01", "size_bytes<=4096", "latency_p50_ms_b32<=2"]);
  });

  it("bounds the task metric on its acceptable side, and only a task metric the points have", () => {
    learnTaskDirections({ segmentation: { "task.miou_vs_golden": "max", "task.miou_drop": "min" } });
    const withTask = [...available, "task.miou_drop", "task.miou_vs_golden"];
    const bounded = (taskMetric: string, taskLimit: number) =>
      resolveView(
        { ...DEFAULT_SWEEP_QUERY, taskMetric, bounds: { ...DEFAULT_SWEEP_QUERY.bounds, taskLimit } },
        withTask,
      );
    expect(bounded("task.miou_drop", 0.005).boundParams).toEqual(["task.miou_drop<=0.005"]);
    expect(bounded("task.miou_vs_golden", 0.9).boundParams).toEqual(["task.miou_vs_golden>=0.9"]);
    const missing = bounded("task.wer_delta", 0.1);
    expect([missing.taskMetric, missing.bounds.taskLimit, missing.boundParams]).toEqual([null, null, []]);
    expect(parse("taskmetric=task.miou_drop&tasklimit=0.01").taskMetric).toBe("task.miou_drop");
    expect(parse("taskmetric=kl_mean").taskMetric).toBeNull(); // not a task metric
  });

  it("drops unknown objectives, a repeated axis and bounds on numbers the points lack", () => {
    const view = resolveView(
      {
        ...DEFAULT_SWEEP_QUERY,
        x: "kl_mean",
        y: "kl_mean",
        batch: 8,
        bounds: { maxKl: null, minTop1: 0.9, maxSize: null, maxLatency: 1, maxMemory: null, taskLimit: null },
      },
      ["kl_mean", "sqnr_db", "size_bytes"],
    );
    expect([view.x, view.y]).toEqual(["kl_mean", "sqnr_db"]);
    expect(view.yDir).toBe("max");
    expect(view.batch).toBeNull();
    expect(view.bounds).toEqual({
      maxKl: null,
      minTop1: null,
      maxSize: null,
      maxLatency: null,
      maxMemory: null,
      taskLimit: null,
    });
    const memory = resolveView(
      { ...DEFAULT_SWEEP_QUERY, bounds: { ...DEFAULT_SWEEP_QUERY.bounds, maxMemory: 20, taskLimit: null } },
      ["kl_mean", "size_bytes", "runtime_memory_mib"],
    );
    expect(memory.boundParams).toEqual(["runtime_memory_mib<=20"]);
    const query = parseSweepQuery(
      new URLSearchParams(formatSweepQuery({ ...DEFAULT_SWEEP_QUERY, bounds: memory.bounds })),
    );
    expect(query.bounds.maxMemory).toBe(20);
    expect(resolveView({ ...DEFAULT_SWEEP_QUERY, x: "nope" }, ["size_bytes"]).objectiveParams).toEqual([
      "size_bytes:min",
    ]);
  });
});
