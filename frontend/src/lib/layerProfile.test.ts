import { describe, expect, it } from "vitest";
import { countInfinite, countMissing, formatSqnr, shortName, sqnrOf, worstLayer } from "./layerProfile";
import { LAYERS, layer, stats } from "./layerProfileFixtures";

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

describe("shortName", () => {
  it("keeps the end of long names", () => {
    expect(shortName("relu_1")).toBe("relu_1");
    expect(shortName("/features/features.0/Conv_output_0", 16)).toBe("…0/Conv_output_0");
    expect(shortName("/features/features.0/Conv_output_0", 16)).toHaveLength(16);
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
