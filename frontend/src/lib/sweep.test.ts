import type { FrontierOut, SweepPoint } from "../api/types";
import { describe, expect, it } from "vitest";
import {
  boundParams,
  boundSpecs,
  buildAxis,
  canLog,
  describePoint,
  frontierLine,
  labelSide,
  latencyRows,
  logTicks,
  paretoFigure,
  pointsCsv,
  hoverText,
  runtimeSeries,
  shortBytes,
  sliderScale,
  samePlace,
  slowerThanGolden,
  sortRows,
  sweepSeries,
  toRow,
  withinBounds,
  type SweepRow,
} from "./sweep";
import { sweepPointDoc } from "./resultFixtures";

const JOB = "11111111-2222-3333-4444-555555555555";

function point(
  index: number,
  label: string,
  objectives: Record<string, number | null>,
  executable?: boolean,
): SweepPoint {
  return {
    job_id: JOB,
    index,
    id: `${JOB}:${index.toString()}`,
    label,
    config: index === 0 ? { type: "none" } : { type: "weight_quant", bits: 8, per_channel: true },
    objectives,
    point:
      executable === undefined
        ? null
        : sweepPointDoc({
            runtime: {
              executable,
              runtime: "onnxruntime CPUExecutionProvider",
              real_export: executable ? "real-int8-weights" : null,
              real_kinds: [],
              matches_simulation: true,
              runtime_note: "note",
            },
            latency: {
              environment: null,
              settings: null,
              file: null,
              file_size_bytes: null,
              session_load_ms: null,
              batches: [
                {
                  batch_size: 1,
                  p50_ms: 0.5,
                  p90_ms: 0.6,
                  mean_ms: 0.55,
                  min_ms: 0.4,
                  max_ms: 0.7,
                  per_sample_p50_ms: 0.5,
                  warmup: 10,
                  repeats: 30,
                },
              ],
            },
          }),
    export_available: true,
    export_manifest: null,
  };
}

const ROWS: SweepRow[] = [
  point(
    0,
    "fp32",
    {
      kl_mean: 0,
      size_bytes: 16000,
      top1_agreement: 1,
      latency_p50_ms_b1: 1,
      latency_p90_ms_b1: 1.1,
      latency_ratio_b1: 1,
    },
    true,
  ),
  point(
    1,
    "w8",
    {
      kl_mean: 1e-5,
      size_bytes: 4000,
      top1_agreement: 1,
      latency_p50_ms_b1: 1.5,
      latency_p90_ms_b1: 1.6,
      latency_ratio_b1: 1.5,
    },
    true,
  ),
  point(
    2,
    "w4a8",
    { kl_mean: 0.004, size_bytes: 2000, top1_agreement: 0.99, latency_p50_ms_b1: 0.8, latency_ratio_b1: 0.8 },
    false,
  ),
  point(3, "lowrank", { kl_mean: 0.4, size_bytes: 8000, top1_agreement: 0.88, latency_p50_ms_b1: null }, true),
].map(toRow);

const FRONTIER: FrontierOut = {
  objectives: [
    { name: "size_bytes", direction: "min" },
    { name: "kl_mean", direction: "min" },
  ],
  frontier: [2, 1, 0].map((i) => {
    const r = ROWS[i] as SweepRow;
    return { id: r.id, job_id: JOB, index: r.index, label: r.label, objectives: r.objectives, knee: i === 1 };
  }),
  knee: `${JOB}:1`,
  knee_method: "max_distance",
  excluded: [],
  filtered: 0,
  n_points: 4,
  constraints: [],
};

describe("rows", () => {
  it("read the runtime class from the point's document", () => {
    expect(ROWS.map((r) => r.runtime)).toEqual(["real", "real", "simulated", "real"]);
    expect(toRow(point(5, "x", {})).runtime).toBe("unknown");
    expect(ROWS[1]?.realExport).toBe("real-int8-weights");
  });

  it("describe the golden model, mixed precision and ordinary configs", () => {
    expect(describePoint("fp32", { type: "none" })).toBe("the golden model, uncompressed");
    expect(describePoint("mixed-5bit", { type: "mixed_precision", average_bits: 5, bits: { conv1: 8, fc: 4 } })).toBe(
      "mixed precision at 5 average bits (conv1 8, fc 4)",
    );
    expect(describePoint("w8", { type: "weight_quant", bits: 8, per_channel: true })).toBe(
      "8-bit weights, symmetric, per channel",
    );
  });

  it("flag points slower than fp32 beyond the measured spread, never fp32 itself", () => {
    expect(ROWS.map((r) => slowerThanGolden(r, 1, ROWS))).toEqual([false, true, false, false]);
    expect(slowerThanGolden(ROWS[1] as SweepRow, null, ROWS)).toBe(false);
    expect(slowerThanGolden(ROWS[1] as SweepRow, 32, ROWS)).toBe(false);
    // 1.05x slower while fp32's own p90 - p50 is 0.1 ms: inside the noise.
    const noisy = toRow(point(6, "w8-noisy", { latency_p50_ms_b1: 1.05, latency_p90_ms_b1: 1.08 }, true));
    expect(slowerThanGolden(noisy, 1, [...ROWS, noisy])).toBe(false);
    // 1.3x with tight spreads: beyond it. Its own wide spread (p90 2.0) would hide it again.
    const slow = toRow(point(7, "w8-slow", { latency_p50_ms_b1: 1.3, latency_p90_ms_b1: 1.35 }, true));
    const spread = toRow(point(8, "w8-wide", { latency_p50_ms_b1: 1.3, latency_p90_ms_b1: 2.0 }, true));
    expect([slow, spread].map((r) => slowerThanGolden(r, 1, [...ROWS, r]))).toEqual([true, false]);
    expect(slowerThanGolden(slow, 1, [slow])).toBe(false); // no fp32 point of its sweep: no claim
  });

  it("list a pruned or low-rank point (simulated-float) apart from the real runtimes", () => {
    const doc = point(9, "prune-0.5", {}, true);
    const dense = toRow({
      ...doc,
      point: doc.point && {
        ...doc.point,
        runtime: doc.point.runtime && { ...doc.point.runtime, real_export: "simulated-float" },
      },
    });
    expect(dense.runtime).toBe("simulated");
    expect(runtimeSeries([...ROWS, dense]).map((s) => [s.key, s.rows.map((r) => r.label)])).toEqual([
      ["real", ["fp32", "w8", "lowrank"]],
      ["simulated", ["w4a8", "prune-0.5"]],
    ]);
  });

  it("tell apart points at the same place on the chart", () => {
    const twin = toRow(point(10, "w8-twin", { kl_mean: 1e-5, size_bytes: 4000 }, true));
    const rows = [...ROWS, twin];
    expect(samePlace(twin, rows, "size_bytes", "kl_mean").map((r) => r.label)).toEqual(["w8", "w8-twin"]);
    expect(hoverText(twin, ["size_bytes", "kl_mean"], null, undefined, rows)).toContain(
      "+1 other point at this position",
    );
  });

  it("sort by index, label or an objective, missing values last both ways", () => {
    const order = (key: string, o: "asc" | "desc") => sortRows(ROWS, key, o).map((r) => r.index);
    expect(order("kl_mean", "asc")).toEqual([0, 1, 2, 3]);
    expect(order("kl_mean", "desc")).toEqual([3, 2, 1, 0]);
    expect(order("latency_p50_ms_b1", "asc")).toEqual([2, 0, 1, 3]);
    expect(order("latency_p50_ms_b1", "desc")).toEqual([1, 0, 2, 3]);
    expect(order("label", "asc")).toEqual([0, 3, 2, 1]);
  });

  it("read the latency per batch size with the ratio to fp32", () => {
    expect(latencyRows(ROWS[1] as SweepRow)).toEqual([
      { batch: 1, p50: 0.5, p90: 0.6, mean: 0.55, min: 0.4, max: 0.7, perSample: 0.5, ratio: 1.5 },
    ]);
    expect(latencyRows(toRow(point(5, "x", {})))).toEqual([]);
  });
});

describe("bounds", () => {
  const specs = boundSpecs({ maxKl: 0.01, minTop1: 0.99, maxSize: null, maxLatency: 1 }, 1);

  it("become the API's bound parameters", () => {
    expect(boundParams(specs)).toEqual(["kl_mean<=0.01", "top1_agreement>=0.99", "latency_p50_ms_b1<=1"]);
    expect(boundSpecs({ maxKl: null, minTop1: null, maxSize: null, maxLatency: 2 }, null)).toEqual([]);
    expect(boundParams(boundSpecs({ maxKl: 1e-7, minTop1: null, maxSize: 4096, maxLatency: null }, 1))).toEqual([
      "kl_mean<=1e-7",
      "size_bytes<=4096",
    ]);
  });

  it("are inclusive, and a missing value is outside (as the API excludes it)", () => {
    expect(ROWS.map((r) => withinBounds(r.objectives, specs))).toEqual([true, false, true, false]);
    expect(withinBounds({ kl_mean: 0.01 }, [{ objective: "kl_mean", atMost: 0.01, atLeast: null }])).toBe(true);
    expect(withinBounds({}, [])).toBe(true);
  });
});

describe("axes", () => {
  it("take a log scale only for values never negative, some positive", () => {
    expect(canLog([0, 1e-5, 0.4])).toBe(true);
    expect(canLog([0, 0])).toBe(false);
    expect(canLog([-1, 2])).toBe(false);
    expect(canLog([null])).toBe(false);
  });

  it("draw a KL of 0 one decade below the smallest positive, at a tick reading 0", () => {
    const axis = buildAxis("kl_mean", "min", null, [0, 1e-5, 0.004, 0.4], "y");
    expect(axis.log).toBe(true);
    expect(axis.zeros).toBe(1);
    expect(axis.map(0)).toBeCloseTo(1e-6, 12);
    expect(axis.map(0.4)).toBe(0.4);
    expect(axis.map(null)).toBeNull();
    expect(axis.layout.type).toBe("log");
    expect(axis.layout.ticktext?.[0]).toBe("0");
    expect(axis.layout.tickvals?.[0]).toBeCloseTo(1e-6, 12);
    expect(axis.layout.ticktext).toContain("1e-5");
    const [lo, hi] = axis.layout.range as [number, number];
    expect(lo).toBeLessThan(-6);
    expect(hi).toBeGreaterThan(Math.log10(0.4));
    expect(String(axis.layout.title && typeof axis.layout.title === "object" ? axis.layout.title.text : "")).toContain(
      "↓ better",
    );
  });

  it("tick sizes in powers of two bytes, and fall back to linear when asked or impossible", () => {
    const size = buildAxis("size_bytes", "min", null, [2000, 4000, 16000], "x");
    expect(size.log).toBe(true);
    expect(size.layout.ticktext).toEqual(["2 KiB", "4 KiB", "8 KiB", "16 KiB"]);
    expect(buildAxis("size_bytes", "min", false, [2000, 4000], "x").log).toBe(false);
    const drop = buildAxis("accuracy_drop_pp", "min", true, [-1, 0, 8], "x");
    expect(drop.log).toBe(false);
    expect(drop.map(-1)).toBe(-1);
    expect(buildAxis("top1_agreement", "max", null, [0.9, 1], "y").layout.tickformat).toBe(".1~%");
  });

  it("tick counts (BOPs, MACs) in k / M / G", () => {
    expect(buildAxis("bops", "min", null, [8e5, 2.6e7], "x").layout.ticktext).toEqual(["1 M", "10 M"]);
  });

  it("tick narrow ranges in 1-2-5 steps and wide ones in decades", () => {
    expect(logTicks(Math.log10(0.002), Math.log10(0.009))).toEqual([0.002, 0.005]);
    expect(logTicks(-8, 0)).toEqual([1e-8, 1e-6, 1e-4, 0.01, 1]);
    expect(logTicks(Math.log10(1000), Math.log10(5000), true)).toEqual([1024, 2048, 4096]);
    expect(shortBytes(1536)).toBe("1.5 KiB");
    expect(shortBytes(512)).toBe("512 B");
  });
});

describe("the Pareto figure", () => {
  const x = buildAxis(
    "size_bytes",
    "min",
    null,
    ROWS.map((r) => r.objectives.size_bytes),
    "x",
  );
  const y = buildAxis(
    "kl_mean",
    "min",
    null,
    ROWS.map((r) => r.objectives.kl_mean),
    "y",
  );

  it("joins the frontier points in x order, zeros at the floor", () => {
    const line = frontierLine(FRONTIER, x, y);
    expect(line.x).toEqual([2000, 4000, 16000]);
    expect(line.y[2]).toBeCloseTo(1e-6, 12);
    expect(line.ids).toEqual([`${JOB}:2`, `${JOB}:1`, `${JOB}:0`]);
    expect(frontierLine(null, x, y).x).toEqual([]);
  });

  it("draws every point once, by runtime, with the frontier, knee, slow rings and the selection", () => {
    const fig = paretoFigure({
      series: runtimeSeries(ROWS),
      x,
      y,
      frontier: FRONTIER,
      bounds: [],
      selected: `${JOB}:2`,
      slowBatch: 1,
    });
    const uids = fig.data.map((t) => ("uid" in t ? t.uid : ""));
    expect(uids).toEqual(["frontier", "points-real", "points-simulated", "knee", "slow", "selected"]);
    const points = fig.data.filter((t) => "uid" in t && String(t.uid).startsWith("points-"));
    expect(points.reduce((n, t) => n + (t as { x: unknown[] }).x.length, 0)).toBe(4);
    expect(fig.drawn).toBe(4);
    expect(fig.slow.map((r) => r.label)).toEqual(["w8"]);
    const simulated = fig.data[2] as { marker: { symbol: string }; customdata: string[]; text: string[] };
    expect(simulated.marker.symbol).toBe("diamond-open");
    expect(simulated.customdata).toEqual([`${JOB}:2`]);
    expect(simulated.text[0]).toContain("<b>w4a8</b>");
    expect(simulated.text[0]).toContain("simulated only");
    expect(fig.layout.annotations?.[0]?.text).toBe("knee: w8");
    // On log axes annotations are placed in log10 units.
    expect(fig.layout.annotations?.[0]?.x).toBeCloseTo(Math.log10(4000), 9);
  });

  it("fades the points outside the bounds in a second trace of the same legend entry", () => {
    const fig = paretoFigure({
      series: runtimeSeries(ROWS),
      x,
      y,
      frontier: null,
      bounds: [{ objective: "kl_mean", atMost: 0.001, atLeast: null }],
      selected: null,
      slowBatch: null,
    });
    expect(fig.outside).toBe(2);
    const uids = fig.data.map((t) => ("uid" in t ? t.uid : ""));
    expect(uids).toEqual(["points-real", "points-real-out", "points-simulated-out"]);
    const out = fig.data[1] as { showlegend: boolean; marker: { opacity: number } };
    expect(out.showlegend).toBe(false);
    expect(out.marker.opacity).toBe(0.25);
    expect((fig.data[2] as { showlegend: boolean }).showlegend).toBe(true);
  });

  it("colours several sweeps apart and leaves out points without a value for an axis", () => {
    const other = { ...(ROWS[1] as SweepRow), jobId: "other", id: "other:1" };
    const series = sweepSeries(
      [...ROWS, other],
      [
        { id: JOB, name: "A" },
        { id: "other", name: "B" },
        { id: "none", name: "C" },
      ],
    );
    expect(series.map((s) => [s.name, s.rows.length])).toEqual([
      ["A", 4],
      ["B", 1],
    ]);
    expect(series[0]?.color).not.toBe(series[1]?.color);
    const lat = buildAxis(
      "latency_p50_ms_b1",
      "min",
      null,
      ROWS.map((r) => r.objectives.latency_p50_ms_b1),
      "x",
    );
    const fig = paretoFigure({ series, x: lat, y, frontier: null, bounds: [], selected: null, slowBatch: 1 });
    expect(fig.undrawn.map((r) => r.label)).toEqual(["lowrank"]);
    expect(fig.drawn).toBe(4);
  });
});

describe("the knee's label", () => {
  const x = buildAxis(
    "size_bytes",
    "min",
    null,
    ROWS.map((r) => r.objectives.size_bytes),
    "x",
  );
  const y = buildAxis(
    "top1_agreement",
    "max",
    null,
    ROWS.map((r) => r.objectives.top1_agreement),
    "y",
  );

  it("points to the better corner, unless the knee sits at that edge of the chart", () => {
    const [fp32, w8, w4a8] = ROWS as [SweepRow, SweepRow, SweepRow];
    expect(labelSide(x, w8, ROWS, -1)).toBe(-1); // 4 KB: middle of 2..16 KB (log)
    expect(labelSide(x, w4a8, ROWS, -1)).toBe(1); // the smallest: label to the right
    expect(labelSide(y, fp32, ROWS, 1)).toBe(-1); // agreement 1 is the top: label below
    expect(labelSide(y, w4a8, ROWS, 1)).toBe(-1);
    expect(labelSide(y, toRow(point(9, "x", { top1_agreement: 0.9 })), ROWS, 1)).toBe(1);
  });
});

describe("CSV", () => {
  it("lists every point with its frontier, knee, bounds and latency flags and every objective", () => {
    const csv = pointsCsv(ROWS, {
      objectives: ["kl_mean", "size_bytes"],
      frontier: FRONTIER,
      bounds: [{ objective: "kl_mean", atMost: 0.01, atLeast: null }],
      slowBatch: 1,
    });
    expect(csv.header).toEqual([
      "job_id",
      "index",
      "label",
      "description",
      "runtime",
      "real_export",
      "export_available",
      "on_frontier",
      "knee",
      "within_bounds",
      "slower_than_fp32",
      "kl_mean",
      "size_bytes",
    ]);
    expect(csv.rows[1]).toEqual([
      JOB,
      1,
      "w8",
      "8-bit weights, symmetric, per channel",
      "real",
      "real-int8-weights",
      true,
      true,
      true,
      true,
      true,
      1e-5,
      4000,
    ]);
    expect(csv.rows[3]?.slice(7, 11)).toEqual([false, false, false, false]);
    const named = pointsCsv(ROWS, {
      objectives: [],
      frontier: null,
      bounds: [],
      slowBatch: null,
      sweepNames: new Map([[JOB, "A"]]),
    });
    expect(named.header[1]).toBe("sweep");
    expect(named.rows[0]?.[1]).toBe("A");
  });
});

describe("bound sliders", () => {
  it("slide over decades for KL and size, linearly otherwise", () => {
    const log = sliderScale([0, 1e-5, 0.4], true);
    expect(log?.min).toBeCloseTo(-5, 9);
    expect(log?.max).toBeCloseTo(-0.3, 9);
    expect(log?.toValue(-2)).toBe(0.01);
    expect(log?.toValue(Math.log10(0.0123456))).toBe(0.0123);
    expect(log?.toPosition(0)).toBe(log?.min);
    const lin = sliderScale([0.88, 1], false);
    expect(lin?.min).toBe(0.88);
    expect(lin?.max).toBe(1);
    expect(lin?.toValue(0.99123)).toBe(0.9912);
    expect(lin?.toPosition(2)).toBe(1);
    expect(sliderScale([], false)).toBeNull();
    expect(sliderScale([0], true)).toBeNull();
    const flat = sliderScale([5, 5], false);
    expect(flat && flat.max > flat.min).toBe(true);
  });
});
