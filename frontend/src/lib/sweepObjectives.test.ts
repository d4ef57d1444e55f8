import { describe, expect, it } from "vitest";
import {
  availableObjectives,
  axisLabel,
  defaultAxes,
  directionOf,
  latencyBatches,
  learnTaskDirections,
  objectiveInfo,
} from "./sweepObjectives";

describe("objective directions", () => {
  it("take a task metric's direction from the API's table", () => {
    expect(directionOf("task.miou_vs_golden")).toBe("min"); // not learnt yet: lower is better
    learnTaskDirections({ segmentation: { "task.miou_vs_golden": "max", "task.miou_drop": "min" } });
    expect(directionOf("task.miou_vs_golden")).toBe("max");
    expect(directionOf("task.miou_drop")).toBe("min");
    expect(objectiveInfo("task.miou_drop").label).toBe("Task miou drop");
  });

  it("minimise damage, cost and time; maximise agreement, SQNR, accuracy, cosine and compression", () => {
    for (const name of [
      "kl_mean",
      "js_mean",
      "size_bytes",
      "bops",
      "macs",
      "ece",
      "accuracy_drop_pp",
      "f1_macro_drop_pp",
      "latency_p50_ms_b1",
      "latency_p90_ms_b32",
      "latency_ratio_b1",
    ])
      expect(directionOf(name), name).toBe("min");
    for (const name of [
      "top1_agreement",
      "sqnr_db",
      "accuracy",
      "cosine_mean",
      "compression_ratio",
      "f1_macro_vs_golden",
      "borderline_agreement",
    ])
      expect(directionOf(name), name).toBe("max");
    expect(directionOf("something_new")).toBe("min");
  });

  it("put KL and size on log axes, not agreement or latency", () => {
    expect(objectiveInfo("kl_mean").log).toBe(true);
    expect(objectiveInfo("size_bytes").log).toBe(true);
    expect(objectiveInfo("top1_agreement").log).toBe(false);
    expect(objectiveInfo("latency_p50_ms_b1").log).toBe(false);
  });

  it("name latency objectives by percentile and batch size", () => {
    expect(objectiveInfo("latency_p90_ms_b32").label).toBe("Latency p90 @ batch 32");
    expect(axisLabel("latency_p50_ms_b1")).toBe("Latency p50 @ batch 1 (ms)");
    expect(axisLabel("latency_ratio_b1")).toBe("Latency vs fp32 @ batch 1 (× fp32)");
    expect(axisLabel("kl_mean")).toBe("KL mean (nats)");
    expect(objectiveInfo("size_bytes").format(4096)).toBe("4.0 KiB");
    expect(objectiveInfo("top1_agreement").format(0.99)).toBe("99.00 %");
  });

  it("name the run-time memory objectives in MiB, lower being better", () => {
    expect(axisLabel("runtime_memory_mib")).toBe("Run-time memory (MiB)");
    expect(axisLabel("peak_rss_mib")).toBe("Peak RSS of the session (MiB)");
    expect(axisLabel("runtime_memory_ratio")).toBe("Run-time memory vs fp32 (× fp32)");
    for (const name of ["runtime_memory_mib", "peak_rss_mib", "runtime_memory_ratio"])
      expect(directionOf(name), name).toBe("min");
    expect(objectiveInfo("runtime_memory_mib").format(12.5)).toContain("MiB");
  });
});

describe("available objectives", () => {
  const points = [
    { objectives: { latency_p50_ms_b32: 2, kl_mean: 0, sqnr_db: null, size_bytes: 10, latency_p50_ms_b1: 1 } },
    { objectives: { kl_mean: 0.1, sqnr_db: null, top1_agreement: 0.9, latency_ratio_b1: 1.2 } },
  ];

  it("are those with a number somewhere, fidelity then cost then latency by batch", () => {
    expect(availableObjectives(points)).toEqual([
      "kl_mean",
      "top1_agreement",
      "size_bytes",
      "latency_p50_ms_b1",
      "latency_ratio_b1",
      "latency_p50_ms_b32",
    ]);
    expect(latencyBatches(availableObjectives(points))).toEqual([1, 32]);
  });

  it("open on size × KL, else what exists, never the same twice", () => {
    expect(defaultAxes(["kl_mean", "top1_agreement", "size_bytes"])).toEqual({ x: "size_bytes", y: "kl_mean" });
    expect(defaultAxes(["sqnr_db", "bops"])).toEqual({ x: "bops", y: "sqnr_db" });
    expect(defaultAxes(["ece", "accuracy"])).toEqual({ x: "ece", y: "accuracy" });
    expect(defaultAxes(["size_bytes"])).toEqual({ x: "size_bytes", y: "size_bytes" });
  });
});
