import { describe, expect, it } from "vitest";
import { rankLayers, rankedLayers, rankingOf } from "./sensitivityRanking";
import { REPORT } from "./sensitivityFixtures";

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
