import type { PlotData, Shape } from "plotly.js";
import { describe, expect, it } from "vitest";
import type { ChannelImportance, MixedPrecisionPlan, SensitivityReport } from "../api/types";
import { toCsv } from "./csv";
import { cellScore, describeConfig, formatCellSqnr, metricOf } from "./sensitivity";
import { channelCsv, channelFigure } from "./sensitivityChannels";
import { logColorAxis, sqnrColorAxis } from "./sensitivityColor";
import { heatmapFigure, hoverGrid, matrixCsv, rowHeight } from "./sensitivityHeatmap";
import { planRows, plansCsv, wholeModelRows } from "./sensitivityPlans";
import { formatScore, rankLayers, rankedLayers, rankingOf } from "./sensitivityRanking";
import { divergence } from "./resultFixtures";

function layer(name: string, type: string, depth: number, total: number) {
  return {
    name,
    type,
    params: 1000 * (depth + 1),
    weight_params: 900 * (depth + 1),
    macs: 5000,
    depth_index: depth,
    depth_fraction: depth / (total - 1),
    shared_with: [],
    notes: [],
  };
}

// The demo digits CNN scanned with four configurations (numbers from a real scan, trimmed), with the config
// id "prune-u0.5" that has a dot in it.
const REPORT: SensitivityReport = {
  job_id: "00000000-0000-0000-0000-000000000001",
  model_id: "00000000-0000-0000-0000-000000000002",
  dataset_id: "00000000-0000-0000-0000-000000000003",
  mode: "only",
  primary_output: "logits",
  output_kind: "classification",
  n_samples: 100,
  ranking_metric: "kl",
  configs: [
    {
      id: "w8-sym-tensor",
      config: { type: "weight_quant", bits: 8, symmetric: true, per_channel: false },
      weight_bits: 8,
    },
    {
      id: "w4-sym-tensor",
      config: { type: "weight_quant", bits: 4, symmetric: true, per_channel: false },
      weight_bits: 4,
    },
    { id: "fp16", config: { type: "float_cast", dtype: "fp16" }, weight_bits: 16 },
    { id: "prune-u0.5", config: { type: "magnitude_prune", sparsity: 0.5 }, weight_bits: null },
  ],
  layers: [layer("conv1", "Conv", 0, 3), layer("conv2", "Conv", 1, 3), layer("fc", "Gemm", 2, 3)],
  matrix: {
    rows: ["conv1", "conv2", "fc"],
    columns: ["w8-sym-tensor", "w4-sym-tensor", "fp16", "prune-u0.5"],
    kl_mean: [
      [1.5e-5, 9.2e-4, 0, 0.0185],
      [4.1e-6, 1.07e-3, 1.3e-8, 0.00244],
      [3.6e-5, 8.3e-3, null, 0.00262],
    ],
    top1_agreement: [
      [1, 0.99, 1, 0.99],
      [1, 0.99, 1, 1],
      [1, 0.99, null, 0.99],
    ],
    sqnr_db: [
      [50.8, 30.7, null, 14.1],
      [53.9, 26.8, 81.2, 22.5],
      [44.9, 20.1, null, 22.5],
    ],
  },
  ranking: {
    overall: ["fc", "conv1", "conv2"],
    by_config: {
      "w8-sym-tensor": ["fc", "conv1", "conv2"],
      "w4-sym-tensor": ["fc", "conv2", "conv1"],
      fp16: ["conv2", "conv1", "fc"],
      "prune-u0.5": ["conv1", "fc", "conv2"],
    },
  },
  whole_model: {
    "w8-sym-tensor": divergence({ kl_mean: 7.9e-5, kl_max: 0.0047, top1_agreement: 1, sqnr_db: 42.2 }),
    fp16: divergence({ kl_mean: 0, kl_max: 0, top1_agreement: 1, sqnr_db: null, sqnr_db_infinite: true }),
  },
  notes: [],
};

describe("configurations", () => {
  it("reads as a sentence", () => {
    expect(describeConfig({ type: "weight_quant", bits: 4 })).toBe("4-bit weights, symmetric, per tensor");
    expect(describeConfig({ type: "weight_quant", bits: 6, symmetric: false, per_channel: true })).toBe(
      "6-bit weights, asymmetric, per channel",
    );
    expect(describeConfig({ type: "magnitude_prune", sparsity: 0.5 })).toBe("50 % of weights pruned (magnitude)");
    expect(describeConfig({ type: "low_rank", rank_ratio: 0.5 })).toBe("low rank, 50 % of the rank kept");
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

describe("log colour axis", () => {
  it("takes log10 of positive KLs, puts zeros a decade below the smallest, and leaves nulls as gaps", () => {
    const axis = logColorAxis([
      [1e-4, 0, null],
      [1e-2, 1, -1e-18],
    ]);
    expect(axis.z[0]?.[0]).toBeCloseTo(-4);
    expect(axis.z[1]?.[1]).toBeCloseTo(0);
    expect(axis.z[0]?.[1]).toBe(-5);
    expect(axis.z[1]?.[2]).toBe(-5); // round-off below 0 counts as 0
    expect(axis.z[0]?.[2]).toBeNull();
    expect(axis.zeros).toBe(2);
    expect(axis.missing).toBe(1);
    expect(axis.zmin).toBe(-5);
    expect(axis.zmax).toBeCloseTo(0);
    expect(axis.tickvals[0]).toBe(-5);
    expect(axis.ticktext[0]).toBe("0");
    expect(axis.ticktext).toContain("1e-4");
    expect(axis.ticktext).toContain("1");
    expect(axis.log).toBe(true);
  });

  it("thins the decades to a readable number of ticks", () => {
    const axis = logColorAxis([[1e-12, 1e3]]);
    expect(axis.tickvals.length).toBeLessThanOrEqual(8);
    expect(axis.tickvals[0]).toBe(-12);
  });

  it("copes with a matrix of only zeros, only nulls, or one value", () => {
    const zeros = logColorAxis([[0, 0]]);
    expect(zeros.z).toEqual([[0, 0]]);
    expect(zeros.ticktext).toEqual(["0"]);
    const empty = logColorAxis([[null, undefined]]);
    expect(empty.z).toEqual([[null, null]]);
    expect(empty.missing).toBe(2);
    const one = logColorAxis([[0.01]]);
    expect(one.zmax - one.zmin).toBeCloseTo(1);
    expect(one.ticktext).toEqual(["0.01"]);
  });

  it("colours −SQNR linearly with the bar reading SQNR", () => {
    const axis = sqnrColorAxis([
      [40, 10],
      [null, 25],
    ]);
    expect(axis.z).toEqual([
      [-40, -10],
      [null, -25],
    ]);
    expect(axis.zmin).toBe(-40);
    expect(axis.zmax).toBe(-10);
    expect(axis.missing).toBe(1);
    expect(axis.ticktext).toContain("20");
    expect(axis.log).toBe(false);
  });
});

describe("heatmap", () => {
  it("has a z row per layer and a column per configuration, hover text per cell", () => {
    const { data, layout, axis } = heatmapFigure(REPORT, null);
    const trace = data[0] as { type: string; z: (number | null)[][]; text: string[][]; x: string[]; y: number[] };
    expect(trace.type).toBe("heatmap");
    expect(trace.z).toHaveLength(3);
    expect(trace.z.every((row) => row.length === 4)).toBe(true);
    expect(trace.x).toEqual(REPORT.matrix.columns);
    expect(trace.y).toEqual([0, 1, 2]);
    expect(trace.z[2]?.[2]).toBeNull(); // fc × fp16 was not computed
    expect(axis.zeros).toBe(1);
    expect(layout.yaxis?.autorange).toBe("reversed");
    expect(layout.yaxis?.ticktext).toEqual(["conv1", "conv2", "fc"]);
    expect(layout.shapes).toEqual([]);
  });

  it("says what each cell is", () => {
    const hover = hoverGrid(REPORT);
    expect(hover[1]?.[1]).toBe(
      [
        "<b>conv2</b> (Conv)",
        "config: <b>w4-sym-tensor</b> — 4-bit weights, symmetric, per tensor",
        "KL mean: 0.00107 nats",
        "top-1 agreement: 99.00 %",
        "SQNR: 26.8 dB",
      ].join("<br>"),
    );
    expect(hover[0]?.[2]).toContain("SQNR: ∞ dB");
    expect(hoverGrid({ ...REPORT, mode: "all_but" })[0]?.[0]).toMatch(/^all but <b>conv1<\/b>/);
    const escaped = hoverGrid({
      ...REPORT,
      matrix: { ...REPORT.matrix, rows: ["a<b>", "conv2", "fc"] },
    });
    expect(escaped[0]?.[0]).toContain("<b>a&lt;b&gt;</b>");
  });

  it("labels each cell of a small heatmap with its number, none of a big one", () => {
    const labels = heatmapFigure(REPORT, null).layout.annotations ?? [];
    const at = (layer: number, config: string) => labels.find((a) => a.y === layer && a.x === config)?.text;
    const kl = REPORT.matrix.kl_mean;
    expect(at(1, "w4-sym-tensor")).toBe(Number((kl[1]?.[1] as number).toPrecision(2)).toString());
    expect(at(0, REPORT.matrix.columns[2] as string)).toBe("0"); // an exact cell
    expect(at(2, REPORT.matrix.columns[2] as string)).toBeUndefined(); // not computed: no number
    expect(labels).toHaveLength(3 * 4 - 1);
  });

  it("outlines the selected layer", () => {
    const shapes = heatmapFigure(REPORT, "conv2").layout.shapes as Partial<Shape>[];
    expect(shapes).toHaveLength(1);
    expect(shapes[0]).toMatchObject({ y0: 0.5, y1: 1.5, xref: "paper", x0: 0, x1: 1 });
    expect(heatmapFigure(REPORT, "nope").layout.shapes).toEqual([]);
  });

  it("stays one trace for 500 layers × 10 configurations, tall enough to read, with thinned labels", () => {
    const rows = Array.from({ length: 500 }, (_, i) => `blocks.${i.toString()}.mlp.fc`);
    const columns = Array.from({ length: 10 }, (_, j) => `cfg-${j.toString()}`);
    const grid = rows.map((_, i) => columns.map((__, j) => (i === 7 && j === 3 ? null : (i + 1) * (j + 1) * 1e-6)));
    const big: SensitivityReport = {
      ...REPORT,
      configs: columns.map((id) => ({ id, config: { type: "noise", bits: 4 }, weight_bits: 4 })),
      layers: rows.map((name, i) => layer(name, "Linear", i, rows.length)),
      matrix: { rows, columns, kl_mean: grid, top1_agreement: grid, sqnr_db: grid },
      ranking: { overall: [], by_config: {} },
      whole_model: {},
    };
    const started = performance.now();
    const figure = heatmapFigure(big, "blocks.250.mlp.fc");
    expect(performance.now() - started).toBeLessThan(1000);
    expect(figure.data).toHaveLength(1);
    const trace = figure.data[0] as { z: unknown[][]; text: string[][] };
    expect(trace.z).toHaveLength(500);
    expect(trace.text[499]).toHaveLength(10);
    expect(figure.layout.annotations).toEqual([]); // 5000 cells: numbers in the hover text only
    expect(figure.height).toBe(500 * rowHeight(500) + (figure.layout.margin?.t ?? 0) + (figure.layout.margin?.b ?? 0));
    expect((figure.layout.yaxis?.tickvals as number[]).length).toBe(250);
    expect(figure.axis.missing).toBe(1);
  });

  it("exports every cell as a CSV line", () => {
    const { header, rows } = matrixCsv(REPORT);
    expect(header).toEqual([
      "mode",
      "layer",
      "type",
      "depth_index",
      "depth_fraction",
      "config",
      "kl_mean",
      "top1_agreement",
      "sqnr_db",
    ]);
    expect(rows).toHaveLength(12);
    expect(rows[3]).toEqual(["only", "conv1", "Conv", 0, 0, "prune-u0.5", 0.0185, 0.99, 14.1]);
    expect(toCsv(header, rows).split("\r\n")[11]).toBe("only,fc,Gemm,2,1,fp16,,,");
  });
});

describe("rankings", () => {
  it("rank by the mean score, ties by the maximum, then by depth, unscored layers last", () => {
    const scores = [
      [1, 3], // mean 2, max 3
      [2, 2], // mean 2, max 2
      [null, null],
      [4, 0], // mean 2, max 4
      [2, 2], // tie with row 1: depth decides
    ];
    const rows = ["a", "b", "c", "d", "e"];
    expect(rankLayers(rows, ["x", "y"], scores, null)).toEqual(["d", "a", "b", "e", "c"]);
    expect(rankLayers(rows, ["x", "y"], scores, "y")).toEqual(["a", "b", "e", "d", "c"]);
    // Turned round (all-but): the lowest mean first; all four tie, so the smaller minimum decides.
    expect(rankLayers(rows, ["x", "y"], scores, null, true)).toEqual(["d", "a", "b", "e", "c"]);
    expect(rankLayers(rows, ["x", "y"], scores, "x", true)).toEqual(["a", "b", "e", "d", "c"]);
  });

  it("use the API's ranking for the only view, also for a config id with a dot", () => {
    expect(rankingOf(REPORT, null)).toEqual(["fc", "conv1", "conv2"]);
    expect(rankingOf(REPORT, "prune-u0.5")).toEqual(["conv1", "fc", "conv2"]);
  });

  it("compute it when the API's is missing or does not match the rows", () => {
    const withoutRanking = { ...REPORT, ranking: { overall: ["fc"], by_config: {} } };
    expect(rankingOf(withoutRanking, "w4-sym-tensor")).toEqual(["fc", "conv2", "conv1"]);
    expect(rankingOf(withoutRanking, null)).toEqual(["conv1", "fc", "conv2"]);
  });

  it("put the layer whose float copy helps most first in the all-but view", () => {
    const allBut = { ...REPORT, mode: "all_but", ranking: { overall: [], by_config: {} } }; // no API ranking: the fallback ranks itself
    // Without an API ranking: lowest KL with everything else compressed first.
    expect(rankingOf(allBut, "w8-sym-tensor")).toEqual(["conv2", "conv1", "fc"]);
  });

  it("carry the score shown next to each layer", () => {
    const ranked = rankedLayers(REPORT, "w4-sym-tensor");
    expect(ranked[0]).toEqual({ rank: 1, name: "fc", type: "Gemm", score: 8.3e-3 });
    const overall = rankedLayers(REPORT, null);
    expect(overall[0]?.score).toBeCloseTo((3.6e-5 + 8.3e-3 + 0.00262) / 3);
  });
});

describe("whole model and plans", () => {
  it("lists the configurations measured on the whole model", () => {
    const rows = wholeModelRows(REPORT);
    expect(rows.map((r) => r.id)).toEqual(["w8-sym-tensor", "fp16"]);
    expect(rows[1]).toMatchObject({ klMean: 0, sqnr: null, sqnrInfinite: true, weightBits: 16 });
  });

  it("reads predicted and measured KL, and failed plans", () => {
    const plans: MixedPrecisionPlan[] = [
      {
        average_bits: 5,
        budget_bytes: 2365,
        assignments: { conv1: "fp16", conv2: "w4-sym-tensor", fc: "w4-sym-tensor" },
        bits: { conv1: 16, conv2: 4, fc: 4 },
        predicted_kl: 0.007,
        size_bytes: 2000,
        measurement: {
          predicted_kl: 0.007,
          measured: divergence({ kl_mean: 0.0063, top1_agreement: 1, sqnr_db: 22.3 }),
          notes: [],
        },
        error: null,
        notes: [],
      },
      { average_bits: 2, error: "no plan fits 2 bits" },
    ];
    const rows = planRows(plans);
    expect(rows[0]).toMatchObject({ predictedKl: 0.007, measuredKl: 0.0063, measuredTop1: 1, measuredSqnr: 22.3 });
    expect(rows[0]?.assignments[0]).toEqual({ layer: "conv1", config: "fp16", bits: 16 });
    expect(rows[1]).toMatchObject({ error: "no plan fits 2 bits", predictedKl: null, assignments: [] });
    const csv = plansCsv(rows);
    expect(csv.rows[0]?.[7]).toBe("conv1=fp16 conv2=w4-sym-tensor fc=w4-sym-tensor");
    expect(csv.rows[1]?.[8]).toBe("no plan fits 2 bits");
  });
});

describe("channel importance", () => {
  const ci: ChannelImportance = {
    job_id: REPORT.job_id,
    layer: "conv2",
    method: "l1",
    unit: "l1 norm of the channel's weights",
    n_channels: 16,
    channels: [
      { channel: 6, rank: 0, score: 18.7 },
      { channel: 2, rank: 1, score: 17.5 },
      { channel: 12, rank: 2, score: null },
    ],
    error: null,
    notes: [],
  };

  it("draws one bar per channel, labelled by channel, most important first", () => {
    const { data, layout } = channelFigure(ci);
    const bars = data[0] as Partial<PlotData>;
    expect(bars.x).toEqual([0, 1, 2]);
    expect(bars.y).toEqual([18.7, 17.5, null]);
    expect(bars.customdata).toEqual([6, 2, 12]);
    expect(layout.xaxis?.ticktext).toEqual(["6", "2", "12"]);
  });

  it("drops per-bar labels for wide layers", () => {
    const wide = {
      ...ci,
      channels: Array.from({ length: 100 }, (_, i) => ({ channel: 99 - i, rank: i, score: 100 - i })),
    };
    expect(channelFigure(wide).layout.xaxis?.ticktext).toBeUndefined();
  });

  it("exports its scores", () => {
    expect(channelCsv(ci).rows[0]).toEqual(["conv2", "l1", 0, 6, 18.7]);
    expect(channelCsv({ ...ci, channels: undefined }).rows).toEqual([]);
  });
});
