import type { PlotData } from "plotly.js";
import { describe, expect, it } from "vitest";
import type { LayerFidelity, LayerProfile, LayerStats } from "../api/types";
import {
  type ActivationShift,
  causeNumbers,
  causesOf,
  calibrationNote,
  calibrationThreshold,
  formatAmplification,
  formatCalibration,
  formatDeadUnits,
  hasCalibration,
  formatRange,
  histogramBars,
  histogramFigure,
  noCauseNote,
  outsideNote,
  shiftCsv,
  shiftFigure,
  shiftRows,
  shiftSummary,
} from "./activationShift";

const stats: LayerStats = { sqnr_db: 30, sqnr_db_infinite: false, cosine_mean: 0.99, cosine_min: 0.9 };

function shift(fields: Partial<ActivationShift> = {}): ActivationShift {
  return {
    n_values: 40,
    golden_min: 0,
    golden_max: 4,
    compressed_min: 0,
    compressed_max: 3,
    histogram: {
      lower: 0,
      upper: 2,
      golden: [10, 20, 5, 1],
      compressed: [12, 18, 6, 0],
      golden_below: 0,
      golden_above: 4,
      compressed_below: 0,
      compressed_above: 4,
      n_counted: 40,
    },
    quantizer_min: 0,
    quantizer_max: 3,
    clip_rate: 0.041,
    golden_outside_rate: 0.025,
    dead_unit_rate: 0.12,
    golden_positive: 25,
    dead_channels: 0,
    active_channels: 4,
    error_amplification: 1.5,
    calibration_outside_rate: null,
    calibration_min: null,
    calibration_max: null,
    calibration_below: null,
    calibration_above: null,
    ...fields,
  };
}

function layer(name: string, depth: number, s: ActivationShift | null, canonical: string | null = null): LayerFidelity {
  return {
    name,
    compressed_name: `${name}_DequantizeLinear_Output`,
    op_type: "Relu",
    depth,
    depth_fraction: depth / 2,
    accumulated: stats,
    local: stats,
    canonical_id: canonical,
    shift: s,
  };
}

function profile(layers: LayerFidelity[], extra: Partial<LayerProfile> = {}): LayerProfile {
  return { job_id: "j", layers, n_samples: 10, ...extra } as LayerProfile;
}

describe("shiftRows", () => {
  it("keeps the layers with a shift, in depth order, named by canonical id", () => {
    const p = profile([layer("b", 2, shift()), layer("old", 1, null), layer("a", 0, shift(), "conv1")]);
    expect(shiftRows(p).map((r) => [r.name, r.label])).toEqual([
      ["a", "conv1"],
      ["b", "b"],
    ]);
  });

  it("is empty for profiles stored before the diagnostics", () => {
    const p = profile([{ ...layer("a", 0, null), shift: undefined }]);
    expect(shiftRows(p)).toEqual([]);
    expect(causesOf(p)).toEqual([]);
  });
});

describe("figures", () => {
  it("draws clipping and dead units in percent, null where a layer has none", () => {
    const rows = shiftRows(profile([layer("a", 0, shift()), layer("b", 1, shift({ clip_rate: null }))]));
    const { data } = shiftFigure(rows);
    expect(data.map((d) => d.name)).toEqual(["clipped (%)", "dead units (%)"]);
    const clip = data[0] as Partial<PlotData>;
    expect(clip.y).toEqual([100 * 0.041, null]);
    expect((data[1] as Partial<PlotData>).y).toEqual([12, 12]);
  });

  it("leaves out a trace no layer has", () => {
    const rows = shiftRows(profile([layer("a", 0, shift({ dead_unit_rate: null }))]));
    expect(shiftFigure(rows).data.map((d) => d.name)).toEqual(["clipped (%)"]);
  });

  it("places histogram bars at the bin centers with the quantizer's range dashed", () => {
    const s = shift();
    expect(histogramBars(s)).toEqual({
      centers: [0.25, 0.75, 1.25, 1.75],
      width: 0.5,
      golden: [10, 20, 5, 1],
      compressed: [12, 18, 6, 0],
    });
    const [row] = shiftRows(profile([layer("a", 0, s)]));
    if (!row) throw new Error("no row");
    const fig = histogramFigure(row);
    expect(fig.data).toHaveLength(2);
    expect(fig.layout.shapes?.map((shape) => shape.x0)).toEqual([0, 3]);
    expect(histogramBars(shift({ histogram: null }))).toBeNull();
  });

  it("says how many values fall outside the bins", () => {
    expect(outsideNote(shift())).toContain("4 golden and 4 compressed of 40 values counted");
    const inside = shift();
    if (inside.histogram) inside.histogram = { ...inside.histogram, golden_above: 0, compressed_above: 0 };
    expect(outsideNote(inside)).toBe("");
  });
});

describe("formatting", () => {
  it("formats ranges, amplification, cause numbers and CSV rows", () => {
    expect(formatRange(0, 2.5)).toBe("[0, 2.5]");
    expect(formatRange(null, 2)).toBe("—");
    expect(formatAmplification(1.25)).toBe("1.25×");
    expect(formatAmplification(null)).toBe("—");
    expect(formatDeadUnits(shift())).toBe("12.00 %");
    expect(formatDeadUnits(shift({ dead_channels: 3, active_channels: 16 }))).toBe("12.00 % (3 of 16 channels)");
    const cause = {
      kind: "clipping" as const,
      layer: "relu",
      label: "conv1",
      to_layer: null,
      value: 0.041,
      threshold: 0.01,
      score: 4.1,
      message: "layer conv1 clips 4.1 % of its outputs",
      numbers: { clip_rate: 0.041, quantizer_max: 2.5 },
    };
    expect(causeNumbers(cause)).toEqual(["clip_rate = 4.10 %", "quantizer_max = 2.5"]);
    const csv = shiftCsv(shiftRows(profile([layer("a", 0, shift(), "conv1")])));
    expect(csv.rows[0]).toEqual([0, "conv1", "Relu", 0, 4, 0, 3, 0, 3, 0.041, 0.025, 0.12, 0, 1.5, null, null, null]);
    expect(csv.header).toHaveLength(csv.rows[0]?.length ?? 0);
  });
});

describe("calibration range", () => {
  const measured = { calibration_min: 0, calibration_max: 1.5, calibration_below: 0, calibration_above: 31 };

  it("adds a bar per layer in percent when the profile measured it", () => {
    const rows = shiftRows(
      profile([
        layer("a", 0, shift({ ...measured, calibration_outside_rate: 0.031 })),
        layer("b", 1, shift({ ...measured, calibration_outside_rate: 0 })),
      ]),
    );
    expect(hasCalibration(rows)).toBe(true);
    const trace = shiftFigure(rows).data.find((d) => d.name === "outside calibration (%)") as Partial<PlotData>;
    expect(trace.y).toEqual([100 * 0.031, 0]);
    const csv = shiftCsv(rows);
    expect(csv.rows[0]?.slice(-3)).toEqual([0, 1.5, 0.031]);
  });

  it("draws nothing and says why for jobs without a calibration set, old profiles included", () => {
    const legacy = shift();
    delete (legacy as Partial<ActivationShift>).calibration_outside_rate;
    const p = profile([layer("a", 0, shift()), layer("b", 1, legacy)]);
    const rows = shiftRows(p);
    expect(hasCalibration(rows)).toBe(false);
    expect(shiftFigure(rows).data.map((d) => d.name)).not.toContain("outside calibration (%)");
    expect(calibrationNote(p, rows)).toContain("not measured");
    expect(shiftCsv(rows).rows[1]?.slice(-3)).toEqual([null, null, null]);
  });

  it("formats the share with its counts and names the calibration samples", () => {
    const s = shift({ ...measured, calibration_below: 2, calibration_above: 1200, calibration_outside_rate: 0.0301 });
    expect(formatCalibration(s)).toBe("3.010 % (2 below, 1,200 above)");
    expect(formatCalibration(shift())).toBe("—");
    const p = profile([layer("a", 0, s)], { calibration_samples: 256 });
    expect(calibrationNote(p, shiftRows(p))).toContain("its first 256 samples");
    const cause = {
      kind: "calibration_range" as const,
      layer: "relu",
      label: "conv1",
      to_layer: null,
      value: 0.0301,
      threshold: 0.01,
      score: 3.01,
      message: "layer conv1: 3.0 % of evaluation activations fall outside the range seen on calibration",
      numbers: { calibration_outside_rate: 0.0301, calibration_max: 1.5 },
    };
    expect(causeNumbers(cause)).toEqual(["calibration_outside_rate = 3.01 %", "calibration_max = 1.5"]);
  });
});

describe("calibration threshold", () => {
  // The engine's rule (worker/engine/layer_profile/causes.py calibration_threshold), written out per case.
  const formula = (n: number) => (2 / (n + 1) > 0.01 ? 2 / (n + 1) : 0.01);

  it("is 2 / (n + 1) below 199 calibration samples and 1 % from there on", () => {
    expect(calibrationThreshold(64)).toBeCloseTo(formula(64), 15);
    expect(calibrationThreshold(64)).toBeCloseTo(2 / 65, 15);
    expect(calibrationThreshold(199)).toBeCloseTo(formula(199), 15);
    expect(calibrationThreshold(199)).toBeCloseTo(0.01, 15);
    expect(calibrationThreshold(256)).toBe(0.01);
    expect(calibrationThreshold(256)).toBe(formula(256));
  });

  it("shows the real threshold when nothing crosses one, and none without a calibration set", () => {
    expect(noCauseNote(64)).toContain("outside the calibration range 3.08 % (over 64 calibration samples)");
    expect(noCauseNote(256)).toContain("outside the calibration range 1 % (over 256 calibration samples)");
    expect(noCauseNote(1000)).toContain("1 % (over 1,000 calibration samples)");
    for (const none of [null, undefined]) {
      expect(noCauseNote(none)).not.toContain("calibration");
      expect(noCauseNote(none)).toContain("local SQNR 20 dB).");
    }
  });
});

describe("shiftSummary (the section's own lead)", () => {
  it("counts the layers past the causes' floors and names the worst by canonical id", () => {
    const rows = shiftRows(
      profile([
        layer("relu", 0, shift({ clip_rate: 0.221, dead_unit_rate: 0.01, error_amplification: 1 }), "conv1"),
        layer("relu_1", 1, shift({ clip_rate: 0.005, dead_unit_rate: 0.12, error_amplification: 6.7 }), "conv2"),
      ]),
    );
    expect(shiftSummary(rows)).toBe(
      "Of 2 layers with activations compared, 1 clip more than 1 % of their values (most: conv1, 22.10 %); " +
        "1 lost more than 5 % of their firing units (most: conv2, 12.00 %); " +
        "the error is amplified most into conv2 (6.7×).",
    );
  });

  it("says so in words when nothing crosses a floor", () => {
    const rows = shiftRows(
      profile([layer("a", 0, shift({ clip_rate: 0.001, dead_unit_rate: 0, error_amplification: 1 }))]),
    );
    expect(shiftSummary(rows)).toBe(
      "Of 1 layer with activations compared, no layer clips more than 1 % of its values; none lost more than 5 % of its firing units.",
    );
    expect(shiftSummary([])).toBe("");
  });
});
