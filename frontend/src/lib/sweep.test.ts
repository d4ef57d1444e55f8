import { describe, expect, it } from "vitest";
import type { SweepPoint } from "../api/types";
import { describePoint, samePlace, slowerThanBigger, slowerThanGolden, toRow, type SweepRow } from "./sweep";
import { hoverText, runtimeSeries } from "./sweepChart";
import { latencyRows, sortRows } from "./sweepTable";
import { ROWS, point } from "./sweepFixtures";

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
    expect(
      describePoint("search-k2", {
        type: "search_step",
        k: 2,
        low: "w2-sym-channel",
        high: "float",
        returned: true,
        bits: { conv1: 32, fc: 2 },
      }),
    ).toBe(
      "search step k=2: 2 most sensitive layer group(s) at float, the rest at w2-sym-channel, the plan the search returned",
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
    const step = toRow({ ...point(12, "search-k1", {}, true), config: { type: "search_step", k: 1 } });
    expect(runtimeSeries([...ROWS, step]).map((s) => [s.key, s.rows.map((r) => r.label)])).toEqual([
      ["real", ["fp32", "w8", "lowrank"]],
      ["simulated", ["w4a8"]],
      ["search", ["search-k1"]],
    ]);
  });

  it("list a channel-pruned point whose export lost its channels with the real runtimes", () => {
    const doc = point(11, "prune-ch0.5-l1", {}, true);
    const withExport = (applied: boolean) =>
      toRow({
        ...doc,
        point: doc.point && {
          ...doc.point,
          runtime: doc.point.runtime && { ...doc.point.runtime, real_export: "simulated-float" },
        },
        export_manifest: { structured_pruning: { applied } } as SweepPoint["export_manifest"],
      });
    expect([withExport(true), withExport(false)].map((r) => r.runtime)).toEqual(["real", "simulated"]);
    expect(hoverText(withExport(true), ["size_bytes", "kl_mean"], null, undefined, ROWS)).toContain(
      "pruned channels removed",
    );
  });

  it("say when a point is slower than a bigger one (the merge's flag), in words and in the hover", () => {
    const row = toRow(point(11, "w4-sym-g32", { kl_mean: 1e-4, size_bytes: 1000 }, true));
    expect(slowerThanBigger(row)).toBe("");
    const doc = row.point;
    if (!doc) throw new Error("the fixture has a document");
    const flagged: SweepRow = {
      ...row,
      point: {
        ...doc,
        slower_than_bigger: {
          than: "w8",
          ratio: 1.5,
          batch_size: 1,
          p50_ms: 1.5,
          than_p50_ms: 1,
          file_size_bytes: 600,
          than_file_size_bytes: 1000,
        },
      },
    };
    expect(slowerThanBigger(flagged)).toContain("slower than w8");
    expect(slowerThanBigger(flagged)).toContain("at batch 1: 1.5 ×");
    expect(hoverText(flagged, ["size_bytes", "kl_mean"], null, undefined, ROWS)).toContain("⚠ slower than w8");
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
