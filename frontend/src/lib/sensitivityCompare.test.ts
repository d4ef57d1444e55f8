import type { PlotData, ScatterData } from "plotly.js";
import { describe, expect, it } from "vitest";
import type { SensitivityProfile } from "../api/types";
import {
  byTypeCsv,
  byTypeFigure,
  countUndrawn,
  layerTypes,
  logTicks,
  pickConfig,
  plotted,
  profileFigure,
  profileLabel,
  profilesCsv,
  selectProfiles,
} from "./sensitivityCompare";

const cnn: SensitivityProfile = {
  job_id: "aaaaaaaa-0000-0000-0000-000000000001",
  model_id: "m1",
  model_name: "digits-cnn",
  ranking_metric: "kl",
  configs: ["w8", "w4"],
  layers: [
    { name: "conv1", type: "Conv", depth_fraction: 0, scores: { w8: 1e-5, w4: 1e-3 } },
    { name: "conv2", type: "Conv", depth_fraction: 0.5, scores: { w8: 0, w4: 2e-3 } },
    { name: "fc", type: "Gemm", depth_fraction: 1, scores: { w8: null, w4: 8e-3 } },
  ],
  by_type: { Conv: { w8: 5e-6, w4: 1.5e-3 }, Gemm: { w8: null, w4: 8e-3 } },
  layer_counts: { Conv: 2, Gemm: 1 },
};
const lstm: SensitivityProfile = {
  job_id: "bbbbbbbb-0000-0000-0000-000000000002",
  model_id: "m2",
  model_name: null,
  ranking_metric: "kl",
  configs: ["w4"],
  layers: [
    { name: "lstm", type: "LSTM", depth_fraction: 0, scores: { w4: 0.05 } },
    { name: "head", type: "Gemm", depth_fraction: 1, scores: { w4: 0.01 } },
  ],
  by_type: { LSTM: { w4: 0.05 }, Gemm: { w4: 0.01 } },
  layer_counts: { LSTM: 1, Gemm: 1 },
};
const regressor: SensitivityProfile = {
  ...lstm,
  job_id: "cccccccc-0000-0000-0000-000000000003",
  model_name: "regressor",
  ranking_metric: "sqnr",
  layers: [{ name: "fc", type: "Gemm", depth_fraction: 0, scores: { w4: -30 } }],
  by_type: { Gemm: { w4: -30 } },
};

describe("sensitivity profiles", () => {
  it("draw only the scans ranked like the first", () => {
    expect(selectProfiles([cnn, regressor, lstm])).toEqual({ metric: "kl", drawn: [cnn, lstm], excluded: [regressor] });
    expect(selectProfiles([regressor, cnn]).metric).toBe("sqnr");
  });

  it("put KL on a log axis (0 and null are gaps) and −SQNR as SQNR on a reversed axis", () => {
    expect(plotted("kl", 0)).toBeNull();
    expect(plotted("kl", null)).toBeNull();
    expect(plotted("kl", 0.5)).toBe(0.5);
    expect(plotted("sqnr", -30)).toBe(30);
    expect(countUndrawn([cnn], "w8", "kl")).toBe(2);
    const { data, layout } = profileFigure([cnn, lstm], "w4", "kl");
    expect(data).toHaveLength(2);
    const first = data[0] as Partial<ScatterData>;
    expect(first.x).toEqual([0, 0.5, 1]);
    expect(first.y).toEqual([1e-3, 2e-3, 8e-3]);
    expect(first.name).toBe("digits-cnn · aaaaaa");
    expect(layout.yaxis?.type).toBe("log");
    expect(profileFigure([regressor], "w4", "sqnr").layout.yaxis?.autorange).toBe("reversed");
    expect(profileLabel(lstm)).toBe("(deleted model) · bbbbbb");
  });

  it("group the mean per layer type, one bar per scan", () => {
    expect(layerTypes([cnn, lstm])).toEqual(["Conv", "Gemm", "LSTM"]);
    const { data, layout } = byTypeFigure([cnn, lstm], "w4", "kl");
    // Bars compare by height: a linear axis from 0, never a log one.
    expect([layout.yaxis?.type, layout.yaxis?.rangemode]).toEqual(["linear", "tozero"]);
    const bars = data.map((d) => d as Partial<PlotData>);
    expect(bars[0]?.x).toEqual(["Conv", "Gemm", "LSTM"]);
    expect(bars[0]?.y).toEqual([1.5e-3, 8e-3, null]);
    expect(bars[1]?.y).toEqual([null, 0.01, 0.05]);
    expect(bars[0]?.customdata).toEqual([2, 1, 0]);
  });

  it("export CSV", () => {
    const csv = profilesCsv([cnn], "w8");
    expect(csv.rows).toHaveLength(3);
    expect(csv.rows[2]).toEqual([cnn.job_id, "digits-cnn", "kl", "fc", "Gemm", 1, "w8", null]);
    expect(byTypeCsv([cnn, lstm], "w4").rows).toEqual([
      [cnn.job_id, "digits-cnn", "kl", "Conv", 2, "w4", 1.5e-3],
      [cnn.job_id, "digits-cnn", "kl", "Gemm", 1, "w4", 8e-3],
      [lstm.job_id, null, "kl", "Gemm", 1, "w4", 0.01],
      [lstm.job_id, null, "kl", "LSTM", 1, "w4", 0.05],
    ]);
  });

  it("compare the asked configuration when every scan has it", () => {
    expect(pickConfig(["w8", "w4"], "w4")).toBe("w4");
    expect(pickConfig(["w4"], "w8")).toBe("w4");
    expect(pickConfig([], "w8")).toBeNull();
  });
});

describe("logTicks", () => {
  it("labels 1-2-5 in each decade when the values span less than two decades, decades otherwise", () => {
    expect(logTicks([2e-5, 6e-5, null])).toBe("D2");
    expect(logTicks([1e-6, 3e-3])).toBe(1);
    expect(logTicks([null])).toBe(1);
  });
});
