import { describe, expect, it } from "vitest";
import { cellScore, describeConfig, formatCellSqnr, metricOf } from "./sensitivity";
import { formatScore } from "./sensitivityRanking";

describe("configurations", () => {
  it("reads as a sentence", () => {
    expect(describeConfig({ type: "weight_quant", bits: 4 })).toBe("4-bit weights, symmetric, per tensor");
    expect(describeConfig({ type: "weight_quant", bits: 6, symmetric: false, per_channel: true })).toBe(
      "6-bit weights, asymmetric, per channel",
    );
    expect(describeConfig({ type: "magnitude_prune", sparsity: 0.5 })).toBe("50 % of weights pruned (magnitude)");
    expect(describeConfig({ type: "low_rank", rank_ratio: 0.5 })).toBe("low rank, 50 % of the rank kept");
    expect(describeConfig({ type: "nm_sparsity", n: 2, m: 4 })).toBe("2:4 sparsity (needs sparse kernels)");
    expect(describeConfig({ type: "noise", bits: 4 })).toBe("noise of 4-bit quantization");
    expect(
      describeConfig({
        type: "schedule",
        stages: [
          { type: "magnitude_prune", sparsity: 0.25 },
          { type: "quantize", weights: { type: "weight_quant", bits: 8 }, activations: { type: "activation_quant" } },
        ],
      }),
    ).toBe(
      "25 % of weights pruned (magnitude) → 8-bit weights, symmetric, per tensor + 8-bit activations, minmax range",
    );
    expect(describeConfig({ type: "future_thing", x: 1 })).toBe('{"type":"future_thing","x":1}');
  });
});

describe("scores", () => {
  it("are KL for classifiers and −SQNR otherwise", () => {
    expect(metricOf("kl")).toBe("kl");
    expect(metricOf("-sqnr_db")).toBe("sqnr");
    expect(metricOf("sqnr")).toBe("sqnr");
    expect(cellScore("kl", { kl: 0.1, top1: 1, sqnr: 20 })).toBe(0.1);
    expect(cellScore("sqnr", { kl: null, top1: null, sqnr: 20 })).toBe(-20);
    expect(cellScore("sqnr", { kl: null, top1: null, sqnr: null })).toBeNull();
    expect(formatScore("sqnr", -20)).toBe("20 dB");
    expect(formatScore("kl", 0.001)).toBe("0.001 nats");
  });

  it("shows a missing SQNR next to a KL of 0 as ∞", () => {
    expect(formatCellSqnr(null, 0)).toBe("∞ dB");
    expect(formatCellSqnr(null, 0.1)).toBe("—");
    expect(formatCellSqnr(12.345678, 0.1)).toBe("12.35 dB");
  });
});
