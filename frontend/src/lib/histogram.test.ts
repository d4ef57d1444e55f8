import { describe, expect, it } from "vitest";
import { histogram, spansDecades } from "./histogram";

describe("histogram", () => {
  it("bins linearly with the maximum in the last bin", () => {
    const h = histogram([0, 1, 2, 3, 4], { log: false, bins: 4 });
    expect(h.edges).toEqual([0, 1, 2, 3, 4]);
    expect(h.counts).toEqual([1, 1, 1, 2]);
    expect(h.counts.reduce((a, b) => a + b)).toBe(5);
  });

  it("bins in log10 space and counts zeros and missing values apart", () => {
    const h = histogram([1e-6, 1e-4, 1e-2, 0, null, Number.NaN], { log: true, bins: 2 });
    expect(h.edges.map((e) => Math.round(Math.log10(e) * 1e9) / 1e9)).toEqual([-6, -4, -2]);
    expect(h.counts).toEqual([1, 2]);
    expect(h.nonPositive).toBe(1);
    expect(h.missing).toBe(2);
  });

  it("widens a range of identical values instead of dividing by zero", () => {
    const h = histogram([0.5, 0.5, 0.5], { log: false, bins: 3 });
    expect(h.counts.reduce((a, b) => a + b)).toBe(3);
    expect(h.edges[0]).toBeLessThan(0.5);
    expect(h.edges[3]).toBeGreaterThan(0.5);
  });

  it("returns no bins when nothing can be binned", () => {
    expect(histogram([0, 0], { log: true }).counts).toEqual([]);
    expect(histogram([], { log: false }).edges).toEqual([]);
  });

  it("picks about sqrt(n) bins by default", () => {
    expect(
      histogram(
        Array.from({ length: 100 }, (_, i) => i),
        { log: false },
      ).counts,
    ).toHaveLength(10);
  });
});

describe("spansDecades", () => {
  it("needs two orders of magnitude between the positive extremes", () => {
    expect(spansDecades([1e-5, 1e-3])).toBe(true);
    expect(spansDecades([0, 1e-3, 5e-3])).toBe(false);
    expect(spansDecades([0.001])).toBe(false);
  });
});
