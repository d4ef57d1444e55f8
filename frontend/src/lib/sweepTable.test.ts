import { describe, expect, it } from "vitest";
import { pointsCsv } from "./sweepTable";
import { FRONTIER, JOB, ROWS } from "./sweepFixtures";

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
