import { describe, expect, it } from "vitest";
import {
  attributionCsv,
  attributionRows,
  attributionSummary,
  evaluationRows,
  waterfallFigure,
  waterfallSteps,
  type PointAttribution,
} from "./attribution";

const fidelity = (kl_mean: number | null, mse: number | null = null) => ({
  kl_mean,
  mse,
  top1_agreement: null,
  accuracy_compressed: null,
});

const technique = (label: string, type: string) => ({ label, config: { type } });

// prune 50 % then int8 weights, KL: alone 0.01 + 0.002 = 0.012 < total 0.015, so they compound by 0.003.
const TWO: PointAttribution = {
  metric: "kl_mean",
  techniques: [technique("prune 50 %", "magnitude_prune"), technique("int8 weights", "weight_quant")],
  total: 0.015,
  alone: [0.01, 0.002],
  cumulative: [0.01, 0.015],
  leave_one_out: [0.002, 0.01],
  interaction: 0.003,
  evaluations: [
    { techniques: [0], fidelity: fidelity(0.01) },
    { techniques: [1], fidelity: fidelity(0.002) },
    { techniques: [0, 1], fidelity: fidelity(0.015) },
  ],
  notes: [],
};

// Three techniques, MSE: alone 0.2 + 0.1 + 0.05 = 0.35 > total 0.25, so they overlap by 0.1; the second step
// lowers the divergence (0.2 → 0.15).
const THREE: PointAttribution = {
  metric: "mse",
  techniques: [
    technique("prune 50 %", "magnitude_prune"),
    technique("int8 weights", "weight_quant"),
    technique("int8 activations", "activation_quant"),
  ],
  total: 0.25,
  alone: [0.2, 0.1, 0.05],
  cumulative: [0.2, 0.15, 0.25],
  leave_one_out: [0.12, 0.22, 0.15],
  interaction: -0.1,
  evaluations: [],
  notes: ["Activations calibrated on 32 samples."],
};

// The second cumulative value failed: steps 2 and 3 have no start or end; the third alone failed too.
const NULLS: PointAttribution = {
  ...THREE,
  total: 0.5,
  alone: [0.3, 0.1, null],
  cumulative: [0.3, null, 0.5],
  leave_one_out: [0.1, 0.45, 0.4],
  interaction: null,
};

describe("cause attribution", () => {
  it("steps the waterfall from 0 through each cumulative value to the total", () => {
    const steps = waterfallSteps(TWO);
    expect(steps.map((s) => [s.label, s.kind, s.missing])).toEqual([
      ["1. prune 50 %", "step", false],
      ["2. int8 weights", "step", false],
      ["total", "total", false],
    ]);
    expect(steps[0]).toMatchObject({ base: 0, delta: 0.01, end: 0.01 });
    expect(steps[1]?.base).toBe(0.01);
    expect(steps[1]?.delta).toBeCloseTo(0.005, 12);
    expect(steps[1]?.end).toBe(0.015);
    expect(steps[2]).toMatchObject({ base: 0, delta: 0.015, end: 0.015 });
  });

  it("marks a step missing when its start or end is missing, never 0", () => {
    const steps = waterfallSteps(NULLS);
    expect(steps.map((s) => s.missing)).toEqual([false, true, true, false]);
    expect(steps[1]).toMatchObject({ base: 0.3, delta: null, end: null });
    expect(steps[2]).toMatchObject({ base: null, delta: null, end: 0.5 });
    expect(waterfallSteps({ ...TWO, total: null }).at(-1)).toMatchObject({ delta: null, missing: true });
  });

  it("draws increasing steps, decreasing steps and the total as three bar traces with a base", () => {
    const { data, layout } = waterfallFigure(THREE);
    const [up, down, total] = data;
    expect(up?.x).toEqual(["1. prune 50 %", "3. int8 activations"]);
    expect(up?.base).toEqual([0, 0.15]);
    expect(down?.x).toEqual(["2. int8 weights"]);
    expect(down?.base).toEqual([0.2]);
    expect((down?.y as number[])[0]).toBeCloseTo(-0.05, 12);
    expect(total).toMatchObject({ x: ["total"], y: [0.25], base: [0] });
    expect(layout.yaxis?.title).toEqual({ text: "MSE" });
    expect(layout.xaxis?.categoryarray).toEqual(["1. prune 50 %", "2. int8 weights", "3. int8 activations", "total"]);
    expect(layout.annotations).toEqual([]);

    const kl = waterfallFigure({ ...NULLS, metric: "kl_mean" });
    expect(kl.layout.yaxis?.title).toEqual({ text: "mean KL (nats)" });
    expect(kl.data.map((t) => t.x)).toEqual([["1. prune 50 %"], [], ["total"]]);
    expect(kl.layout.annotations?.map((n) => n.x)).toEqual(["2. int8 weights", "3. int8 activations"]);
  });

  it("gives each technique alone, added in order and removed when left out", () => {
    const rows = attributionRows(TWO);
    expect(rows.map((r) => [r.label, r.alone])).toEqual([
      ["prune 50 %", 0.01],
      ["int8 weights", 0.002],
    ]);
    // removed = total − leave-one-out: 0.015 − 0.002 = 0.013 (13/15 of the total), 0.015 − 0.01 = 0.005 (1/3).
    expect(rows[0]?.removed).toBeCloseTo(0.013, 12);
    expect(rows[0]?.removedShare).toBeCloseTo(13 / 15, 12);
    expect(rows[1]?.added).toBeCloseTo(0.005, 12);
    expect(rows[1]?.removed).toBeCloseTo(0.005, 12);
    expect(rows[1]?.removedShare).toBeCloseTo(1 / 3, 12);

    const nulls = attributionRows(NULLS);
    expect(nulls.map((r) => r.alone)).toEqual([0.3, 0.1, null]);
    expect(nulls.map((r) => r.added)).toEqual([0.3, null, null]);
    // 0.5 − 0.1, 0.5 − 0.45, 0.5 − 0.4
    expect(nulls.map((r) => r.removed?.toFixed(6))).toEqual(["0.400000", "0.050000", "0.100000"]);
    expect(attributionRows({ ...TWO, total: null }).map((r) => [r.removed, r.removedShare])).toEqual([
      [null, null],
      [null, null],
    ]);
  });

  it("writes a CSV row per technique, then the total and the interaction", () => {
    const { header, rows } = attributionCsv(NULLS);
    expect(header).toEqual([
      "metric",
      "step",
      "technique",
      "alone",
      "cumulative",
      "added_in_order",
      "leave_one_out",
      "removed_when_left_out",
      "removed_share",
    ]);
    expect(rows).toHaveLength(5);
    expect(rows[1]?.slice(0, 7)).toEqual(["mse", 2, "int8 weights", 0.1, null, null, 0.45]);
    expect(rows[3]).toEqual(["mse", "total", "all techniques", null, 0.5, null, null, null, null]);
    expect(rows[4]).toEqual(["mse", "interaction", "total − sum of alone", null, null, null, null, null, null]);
  });

  it("names the technique whose leaving out removes the most, and whether the techniques compound", () => {
    expect(attributionSummary(TWO)).toBe(
      "Leaving out prune 50 % removes 87 % of the divergence; the techniques compound (together 0.003 nats more " +
        "than the sum of each alone).",
    );
    // removed 0.13, 0.03, 0.1 of 0.25: prune 52 %.
    expect(attributionSummary(THREE)).toBe(
      "Leaving out prune 50 % removes 52 % of the divergence; the techniques overlap (together 0.1 less than the " +
        "sum of each alone).",
    );
    expect(attributionSummary(NULLS)).toBe("Leaving out prune 50 % removes 80 % of the divergence.");
    expect(attributionSummary({ ...TWO, total: null, interaction: null })).toBe("No leave-one-out value was measured.");
    expect(attributionSummary({ ...TWO, total: 0.01, interaction: 0 })).toBe(
      "Leaving out prune 50 % removes 80 % of the divergence; the techniques add up exactly (together the sum " +
        "of each alone).",
    );
  });

  it("labels the measured subsets by their techniques", () => {
    expect(evaluationRows(TWO).map((e) => [e.techniques, e.fidelity.kl_mean])).toEqual([
      ["prune 50 %", 0.01],
      ["int8 weights", 0.002],
      ["prune 50 % + int8 weights", 0.015],
    ]);
  });
});
