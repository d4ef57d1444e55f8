import { describe, expect, it } from "vitest";
import { calibrationSentence, chosenCalibrationSet, quantizesActivations } from "./sweepCalibration";

describe("quantizesActivations", () => {
  it("finds activation quantizers at every level", () => {
    expect(quantizesActivations({ type: "activation_quant", bits: 8 })).toBe(true);
    expect(quantizesActivations({ type: "quantize", weights: { type: "weight_quant" }, activations: null })).toBe(
      false,
    );
    expect(quantizesActivations({ type: "quantize", activations: { type: "activation_quant" } })).toBe(true);
    expect(
      quantizesActivations({ type: "schedule", stages: [{ type: "magnitude_prune" }, { type: "activation_quant" }] }),
    ).toBe(true);
    expect(quantizesActivations({ type: "weight_quant", bits: 4 })).toBe(false);
    expect(quantizesActivations({ type: "channel_prune", sparsity: 0.5, norm: "reconstruction" })).toBe(true);
    expect(quantizesActivations({ type: "channel_prune", sparsity: 0.5, norm: "l1" })).toBe(false);
  });
});

describe("calibrationSentence", () => {
  it("holds out min(128, N / 4) samples of the evaluation set by default", () => {
    expect(calibrationSentence(true, 360, 100, null, null)).toBe(
      "Samples 0–89 calibrate the activation ranges and are not evaluated; the next 100 are evaluated.",
    );
    expect(calibrationSentence(true, 10_000, 512, null, null)).toContain("Samples 0–127 calibrate");
    expect(calibrationSentence(true, 3, 512, null, null)).toContain("too few");
    expect(calibrationSentence(true, 50, 512, null, 40)).toContain("the next 10 are evaluated");
    expect(calibrationSentence(true, 360, null, null, null)).toContain("the samples after them are evaluated");
  });
  it("names a calibration set and says nothing when nothing is calibrated", () => {
    expect(calibrationSentence(true, 360, 100, { name: "train", n_samples: 1000 }, null)).toBe(
      "The first 256 samples of train calibrate the activation ranges.",
    );
    expect(calibrationSentence(false, 360, 100, null, null)).toBeNull();
  });
});

describe("chosenCalibrationSet", () => {
  const sets = [{ id: "eval" }, { id: "train" }];
  it("names a chosen set only when something is calibrated and it is not the evaluation set", () => {
    expect(chosenCalibrationSet(sets, "eval", "train", true)).toEqual({ id: "train" });
    expect(chosenCalibrationSet(sets, "eval", "train", false)).toBeNull();
    expect(chosenCalibrationSet(sets, "eval", "eval", true)).toBeNull();
    expect(chosenCalibrationSet(sets, "eval", "", true)).toBeNull();
  });
});
