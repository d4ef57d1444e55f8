import { describe, expect, it } from "vitest";
import { KL_FLOOR, layerRows, sampleChanges, type RecoveryLayers } from "./beforeAfter";
import type { RecoverySummary } from "./recovery";

const summary = {
  heldout_index: [7, 3, 9, 1],
  per_sample: {
    kl_before: [0.5, 0.1, null, 0.0],
    kl_after: [0.2, 0.3, 0.1, 0.0],
    top1_before: [false, true, true, true],
    top1_after: [true, false, true, true],
  },
} as unknown as RecoverySummary;

const stats = (sqnr: number | null, infinite = false) => ({
  sqnr_db: sqnr,
  sqnr_db_infinite: infinite,
  cosine_mean: null,
  cosine_min: null,
});

describe("before/after per sample", () => {
  it("counts samples that improved or got worse, and top-1 flips fixed or broken", () => {
    const c = sampleChanges(summary);
    expect([c.n, c.improved, c.worse, c.fixed, c.broken]).toEqual([3, 1, 1, 1, 1]);
    // dataset indices; an exact match (KL 0) drawn at the floor; the non-finite sample left out
    expect(c.points).toEqual([
      { index: 7, before: 0.5, after: 0.2 },
      { index: 3, before: 0.1, after: 0.3 },
      { index: 1, before: KL_FLOOR, after: KL_FLOOR },
    ]);
  });
});

describe("before/after per layer", () => {
  it("aligns the two profiles by golden layer, in the golden order", () => {
    const layers = {
      before: {
        layers: [
          { name: "conv1", accumulated: stats(20) },
          { name: "fc", accumulated: stats(24) },
        ],
      },
      after: {
        layers: [
          { name: "conv1", accumulated: stats(27) },
          { name: "relu", accumulated: stats(null, true) },
          { name: "fc", accumulated: stats(31) },
        ],
      },
    } as unknown as RecoveryLayers;
    expect(layerRows(layers)).toEqual([
      { name: "conv1", before: 20, after: 27, infinite: false },
      { name: "fc", before: 24, after: 31, infinite: false },
      { name: "relu", before: null, after: null, infinite: true },
    ]);
  });
});
