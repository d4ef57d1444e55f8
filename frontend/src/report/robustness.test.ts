import { describe, expect, it } from "vitest";
import {
  mostBrittle,
  ROBUSTNESS_CSV_HEADER,
  robustnessCsvRows,
  severityCurves,
  sliceLabel,
  sliceValue,
  type FidelityRobustness,
} from "./robustness";

const point = (severity: number, kl: number, ratio: number | null, golden: number, compressed: number) => ({
  severity,
  severity_name: ["mild", "moderate", "severe"][severity - 1],
  value: severity / 10,
  n_samples: 100,
  n_finite: 100,
  kl_mean_nats: kl,
  mse_mean: kl * 2,
  cosine_mean: 1 - kl / 2,
  top1_agreement: 1 - kl,
  golden_accuracy: golden,
  compressed_accuracy: compressed,
  brittleness_ratio: ratio,
  worst_samples: [],
  warnings: [],
});

const doc = {
  job_id: "j",
  error: null,
  primary_output: "logits",
  n_samples: 100,
  divergence: "kl",
  seed: 0,
  clean: {
    n_samples: 100,
    n_finite: 100,
    kl_mean_nats: 0.01,
    mse_mean: 0.02,
    cosine_mean: 0.995,
    top1_agreement: 0.99,
    golden_accuracy: 0.9,
    compressed_accuracy: 0.89,
  },
  slices: [
    {
      name: "gaussian_noise",
      parameter: "std",
      target: "float",
      points: [point(1, 0.02, 2, 0.85, 0.8), point(3, 0.1, 10, 0.6, 0.5)],
    },
    { name: "occlusion", parameter: "side", target: "image", points: [point(2, 0.03, 3, 0.8, 0.79)] },
  ],
  skipped: [],
} as unknown as FidelityRobustness;

describe("robustness helpers", () => {
  it("starts every curve at the clean value, severity 0", () => {
    const curves = severityCurves(doc, "compressed_accuracy");
    expect(curves.map((c) => c.slice)).toEqual(["gaussian_noise", "occlusion"]);
    expect(curves[0]).toMatchObject({ x: [0, 1, 3], y: [0.89, 0.8, 0.5] });
    expect(curves[1]).toMatchObject({ x: [0, 2], y: [0.89, 0.79] });
  });

  it("finds the most brittle slice and writes every point as CSV", () => {
    expect(mostBrittle(doc)).toEqual({ slice: "gaussian_noise", ratio: 10 });
    const rows = robustnessCsvRows(doc);
    expect(rows).toHaveLength(4);
    expect(rows[0]?.[0]).toBe("clean");
    expect(rows[2]).toEqual(["gaussian_noise", 3, 0.3, 0.1, 0.2, 0.95, 0.9, 0.6, 0.5, 10]);
    expect(rows.every((r) => r.length === ROBUSTNESS_CSV_HEADER.length)).toBe(true);
  });

  it("has no most brittle slice when no ratio is defined", () => {
    const flat = {
      ...doc,
      slices: [{ name: "occlusion", parameter: "side", target: "image", points: [point(1, 0, null, 1, 1)] }],
    } as FidelityRobustness;
    expect(mostBrittle(flat)).toBeNull();
  });

  it("labels the slices and gives each strength its unit", () => {
    expect(sliceLabel("pgd")).toBe("PGD (adversarial)");
    expect(sliceLabel("snow")).toBe("snow");
    expect(sliceValue("jpeg", 15)).toBe("quality 15");
    expect(sliceValue("token_replacement", 0.15)).toBe("15 % of tokens");
    expect(sliceValue("fgsm", 0.03)).toBe("ε 3 % of range");
    expect(sliceValue("gaussian_noise", 0.25)).toBe("σ 0.25 std");
    expect(sliceValue("occlusion", 0.125)).toBe("12.5 % of side");
  });
});
