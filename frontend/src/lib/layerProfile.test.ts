import type { ScatterData } from "plotly.js";
import { describe, expect, it } from "vitest";
import type { LayerFidelity, LayerProfile, LayerStats } from "../api/types";
import { toCsv } from "./csv";
import {
  cosineCsv,
  countInfinite,
  countMissing,
  cosineFigure,
  formatSqnr,
  hoverText,
  infinityAxis,
  infinityCap,
  kernelGapHeadline,
  kernelGapNumbers,
  type KernelGap,
  niceTicks,
  notesBesideKernelGaps,
  shortName,
  significantKernelGaps,
  sortLayers,
  sqnrCsv,
  sqnrFigure,
  sqnrOf,
  worstLayer,
} from "./layerProfile";

function stats(sqnr: number | null | "inf", cosine: number | null = 0.9999): LayerStats {
  return {
    sqnr_db: sqnr === "inf" ? null : sqnr,
    sqnr_db_infinite: sqnr === "inf",
    cosine_mean: cosine,
    cosine_min: cosine === null ? null : cosine - 0.0001,
  };
}

function layer(depth: number, accumulated: LayerStats, local: LayerStats | null, extra = {}): LayerFidelity {
  return {
    name: `layer_${depth.toString()}`,
    compressed_name: `layer_${depth.toString()}_DequantizeLinear_Output`,
    op_type: depth === 0 ? "Input" : "Conv",
    depth,
    depth_fraction: depth / 4,
    accumulated,
    local,
    local_note: null,
    ...extra,
  };
}

// Five layers: identical input (∞), a layer whose local SQNR is the lowest, a layer without a local
// comparison, a layer whose accumulated numbers could not be computed, and the output.
const LAYERS: LayerFidelity[] = [
  layer(0, stats("inf", 1), stats("inf", 1)),
  layer(1, stats(45.3), stats(30.2)),
  layer(2, stats(42.1), null, { local_note: "the compressed layer has two inputs" }),
  layer(3, stats(null, null), stats(44)),
  layer(4, stats(40), stats(41.5)),
];
const PROFILE: LayerProfile = {
  job_id: "00000000-0000-0000-0000-000000000001",
  error: null,
  n_samples: 256,
  profile_batch_size: 16,
  layers: LAYERS,
  unmatched_golden: ["conv2d"],
  unmatched_compressed: [],
  notes: [],
};

const scatter = (d: unknown) => d as Partial<ScatterData>;

describe("sqnrOf and formatSqnr", () => {
  it("reads an infinite SQNR as +Infinity and a missing one as null", () => {
    expect(sqnrOf(stats("inf"))).toBe(Number.POSITIVE_INFINITY);
    expect(sqnrOf(stats(12.5))).toBe(12.5);
    expect(sqnrOf(stats(null))).toBeNull();
    expect(sqnrOf(null)).toBeNull();
    expect(formatSqnr(stats("inf"))).toBe("∞ dB");
    expect(formatSqnr(stats(42.0699))).toBe("42.07 dB");
    expect(formatSqnr(null)).toBe("—");
  });
});

describe("worstLayer", () => {
  it("picks the lowest finite local SQNR", () => {
    expect(worstLayer(LAYERS)?.depth).toBe(1);
  });

  it("takes the earliest layer on a tie and ignores infinite and missing values", () => {
    const tied = [layer(3, stats(1), stats(20)), layer(2, stats(1), stats(20)), layer(5, stats(1), stats("inf"))];
    expect(worstLayer(tied)?.depth).toBe(2);
  });

  it("is null when no layer has a finite local SQNR", () => {
    expect(worstLayer([layer(0, stats(3), null), layer(1, stats("inf"), stats("inf"))])).toBeNull();
    expect(worstLayer([])).toBeNull();
  });
});

describe("infinityCap", () => {
  it("lies clearly above every finite SQNR", () => {
    const cap = infinityCap(LAYERS);
    expect(cap).toBeGreaterThanOrEqual(45.3 + 5);
    expect(cap).toBeGreaterThanOrEqual(45.3 + 0.25 * (45.3 - 30.2));
  });

  it("is 0 when nothing is finite", () => {
    expect(infinityCap([layer(0, stats("inf"), stats("inf"))])).toBe(0);
  });
});

describe("niceTicks", () => {
  it("steps by 1, 2 or 5 times a power of ten within the range", () => {
    expect(niceTicks(30.2, 45.3)).toEqual([35, 40, 45]);
    expect(niceTicks(30.2, 41)).toEqual([32, 34, 36, 38, 40]);
    expect(niceTicks(0, 100)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(niceTicks(42.071, 42.1)).toEqual([42.075, 42.08, 42.085, 42.09, 42.095, 42.1]);
  });

  it("returns the value of an empty range", () => {
    expect(niceTicks(3, 3)).toEqual([3]);
    expect(niceTicks(Number.NaN, Number.NaN)).toEqual([]);
  });
});

describe("infinityAxis", () => {
  it("is null when nothing is infinite", () => {
    expect(infinityAxis(LAYERS.slice(1))).toBeNull();
  });

  it("puts an ∞ tick at the cap above round ticks over the finite values", () => {
    const axis = infinityAxis(LAYERS);
    const cap = infinityCap(LAYERS);
    expect(axis?.tickvals.at(-1)).toBe(cap);
    expect(axis?.ticktext.at(-1)).toBe("∞");
    expect(axis?.ticktext.slice(0, -1)).toEqual(["35", "40", "45"]);
  });

  it("has only the ∞ tick when every SQNR is infinite", () => {
    expect(infinityAxis([layer(0, stats("inf"), stats("inf"))])).toEqual({
      tickvals: [0],
      ticktext: ["∞"],
    });
  });
});

describe("sqnrFigure", () => {
  const { data, layout } = sqnrFigure(PROFILE);
  const [accumulated, local] = data.map(scatter);

  it("draws one scatter trace per kind over the depths, then the infinite values and the worst layer", () => {
    expect(data.map((d) => scatter(d).name)).toEqual([
      "accumulated",
      "local",
      "+∞ (identical outputs)",
      "adds the most error",
    ]);
    expect(accumulated?.x).toEqual([0, 1, 2, 3, 4]);
    expect(local?.x).toEqual([0, 1, 2, 3, 4]);
    expect(accumulated?.connectgaps).toBe(false);
  });

  it("draws infinite values at the cap, ringed by a third trace, and missing values as gaps", () => {
    const cap = infinityCap(LAYERS);
    expect(accumulated?.y).toEqual([cap, 45.3, 42.1, null, 40]);
    expect(local?.y).toEqual([cap, 30.2, null, 44, 41.5]);
    const infinite = scatter(data[2]);
    expect(infinite.name).toContain("∞");
    expect(infinite.x).toEqual([0, 0]);
    expect(infinite.y).toEqual([cap, cap]);
    expect(infinite.marker?.symbol).toBe("triangle-up-open");
    expect(layout.shapes?.some((s) => s.type === "line" && s.y0 === cap)).toBe(true);
    expect(layout.yaxis?.ticktext?.at(-1)).toBe("∞");
  });

  it("rings the worst layer and describes each layer in the hover", () => {
    const ring = scatter(data[3]);
    expect(ring.x).toEqual([1]);
    expect(ring.y).toEqual([30.2]);
    expect(layout.shapes?.some((s) => s.type === "rect" && s.x0 === 0.6 && s.x1 === 1.4)).toBe(true);
    const hover = (accumulated?.hovertext as string[])[0] ?? "";
    expect(hover).toContain("layer_0_DequantizeLinear_Output");
    expect(hover).toContain("SQNR: accumulated ∞ dB, local ∞ dB");
  });

  it("labels the x axis with layer names for small models", () => {
    expect(layout.xaxis?.ticktext).toEqual(LAYERS.map((l) => l.name));
  });

  it("has no infinity trace, line or tick when nothing is infinite", () => {
    const finite = sqnrFigure({ ...PROFILE, layers: LAYERS.slice(1) });
    expect(finite.data.map((d) => scatter(d).name)).toEqual(["accumulated", "local", "adds the most error"]);
    expect(finite.layout.shapes?.filter((s) => s.type === "line")).toEqual([]);
    expect(finite.layout.yaxis?.tickvals).toBeUndefined();
  });

  it("draws empty traces for a profile without layers", () => {
    const empty = sqnrFigure({ ...PROFILE, layers: [] });
    expect(empty.data.map((d) => scatter(d).x)).toEqual([[], []]);
    expect(empty.data).toHaveLength(2);
    expect(empty.layout.shapes).toEqual([]);
  });
});

describe("cosineFigure", () => {
  it("plots the cosine mean with gaps for missing values", () => {
    const { data, layout } = cosineFigure(PROFILE);
    expect(data.map((d) => scatter(d).y)).toEqual([
      [1, 0.9999, 0.9999, null, 0.9999],
      [1, 0.9999, null, 0.9999, 0.9999],
      [0.9999],
    ]);
    expect(layout.shapes).toHaveLength(1);
  });
});

describe("hoverText", () => {
  it("escapes markup in names and includes the local note", () => {
    const text = hoverText(layer(2, stats(1), null, { name: "a<b>", local_note: "no local" }), 5);
    expect(text).toContain("a&lt;b&gt;");
    expect(text).toContain("depth 2 of 4 (0.5)");
    expect(text).toContain("local —");
    expect(text).toContain("note: no local");
  });
});

describe("shortName", () => {
  it("keeps the end of long names", () => {
    expect(shortName("relu_1")).toBe("relu_1");
    expect(shortName("/features/features.0/Conv_output_0", 16)).toBe("…0/Conv_output_0");
    expect(shortName("/features/features.0/Conv_output_0", 16)).toHaveLength(16);
  });
});

describe("CSV", () => {
  it("writes SQNR rows with inf for identical outputs and empty cells for missing values", () => {
    const { header, rows } = sqnrCsv(PROFILE);
    const lines = toCsv(header, rows).split("\r\n");
    expect(lines[0]).toBe(
      "depth,depth_fraction,name,compressed_name,op_type,accumulated_sqnr_db,local_sqnr_db,qdq_err_sqnr_db,local_note",
    );
    expect(lines[1]).toBe("0,0,layer_0,layer_0_DequantizeLinear_Output,Input,inf,inf,,");
    expect(lines[3]).toBe(
      "2,0.5,layer_2,layer_2_DequantizeLinear_Output,Conv,42.1,,,the compressed layer has two inputs",
    );
    expect(rows).toHaveLength(5);
  });

  it("writes cosine rows", () => {
    const { header, rows } = cosineCsv(PROFILE);
    expect(header).toContain("local_cosine_min");
    expect(rows[2]?.slice(5)).toEqual([
      0.9999,
      0.9999 - 0.0001,
      undefined,
      undefined,
      "the compressed layer has two inputs",
    ]);
  });
});

describe("sortLayers", () => {
  const depths = (layers: LayerFidelity[]) => layers.map((l) => l.depth);

  it("sorts by local SQNR with ∞ above every number and missing values last", () => {
    expect(depths(sortLayers(LAYERS, "local_sqnr", "asc"))).toEqual([1, 4, 3, 0, 2]);
    expect(depths(sortLayers(LAYERS, "local_sqnr", "desc"))).toEqual([0, 3, 4, 1, 2]);
  });

  it("keeps missing accumulated values last and breaks ties by depth", () => {
    expect(depths(sortLayers(LAYERS, "accumulated_cosine", "desc"))).toEqual([0, 1, 2, 4, 3]);
    expect(depths(sortLayers(LAYERS, "op_type", "asc"))).toEqual([1, 2, 3, 4, 0]);
  });

  it("does not change its input", () => {
    const copy = [...LAYERS];
    sortLayers(LAYERS, "name", "desc");
    expect(LAYERS).toEqual(copy);
  });
});

describe("countInfinite and countMissing", () => {
  it("count the ∞ markers and the gaps of each chart", () => {
    expect(countInfinite(LAYERS)).toBe(2);
    expect(countMissing(LAYERS, "sqnr")).toBe(2);
    expect(countMissing(LAYERS, "cosine")).toBe(2);
    expect(countMissing([], "sqnr")).toBe(0);
  });
});

describe("kernel gap", () => {
  const NOTE = "Runtime kernels lose 16.7 dB more than simulated quantization at output 'logits': …";
  const gap = (over: Partial<KernelGap>): KernelGap => ({
    output: "logits",
    compressed_output: "logits",
    simulated_sqnr_db: 41.83,
    simulated_sqnr_db_infinite: false,
    runtime_sqnr_db: 25.16,
    runtime_sqnr_db_infinite: false,
    gap_db: 16.67,
    significant: true,
    threshold_db: 3,
    note: NOTE,
    ...over,
  });
  const profile = (kernel_gap: KernelGap[] | null | undefined): LayerProfile => ({
    ...PROFILE,
    notes: ["ONNX tensors matched by name", NOTE],
    kernel_gap,
  });

  it("keeps only the significant gaps", () => {
    const small = gap({ output: "aux", gap_db: 0.2, significant: false, note: null });
    expect(significantKernelGaps(profile([gap({}), small])).map((g) => g.output)).toEqual(["logits"]);
    expect(significantKernelGaps(profile([small]))).toEqual([]);
    expect(significantKernelGaps(profile(null))).toEqual([]);
    expect(significantKernelGaps(profile(undefined))).toEqual([]);
  });

  it("says how much more the runtime loses, and where", () => {
    expect(kernelGapHeadline(gap({}))).toBe(
      "Runtime kernels lose 16.7 dB more than simulated quantization at output logits",
    );
    expect(kernelGapNumbers(gap({}))).toBe("runtime 25.2 dB, simulated 41.8 dB");
    const exact = gap({ simulated_sqnr_db: null, simulated_sqnr_db_infinite: true, gap_db: null });
    expect(kernelGapHeadline(exact)).toBe(
      "Runtime kernels add error that simulated quantization does not predict at output logits",
    );
    expect(kernelGapNumbers(exact)).toBe("runtime 25.2 dB, simulated ∞ dB");
  });

  it("leaves the callout's notes out of the other notes", () => {
    expect(notesBesideKernelGaps(profile([gap({})]))).toEqual(["ONNX tensors matched by name"]);
    expect(notesBesideKernelGaps(profile(null))).toEqual(["ONNX tensors matched by name", NOTE]);
  });
});

describe("the own quantizer's error (qdq_err)", () => {
  const withQdq: LayerProfile = {
    ...PROFILE,
    layers: LAYERS.map((l, i) => (i === 1 ? { ...l, qdq_err: stats(38.5, 0.99), qdq_input: "relu" } : l)),
  };

  it("is a third trace only when some layer has it", () => {
    const names = (p: LayerProfile) => sqnrFigure(p).data.map((d) => scatter(d).name);
    expect(names(PROFILE)).not.toContain("own quantizer (qdq_err)");
    const trace = sqnrFigure(withQdq).data.find((d) => scatter(d).name === "own quantizer (qdq_err)");
    expect(scatter(trace).y).toEqual([null, 38.5, null, null, null]);
  });

  it("is a CSV column and does not count as a missing value where a tensor is not re-quantized", () => {
    const csv = sqnrCsv(withQdq);
    expect(csv.header).toContain("qdq_err_sqnr_db");
    expect(csv.rows[1]?.[csv.header.indexOf("qdq_err_sqnr_db")]).toBe(38.5);
    expect(countMissing(withQdq.layers ?? [], "sqnr")).toBe(countMissing(LAYERS, "sqnr"));
  });
});
