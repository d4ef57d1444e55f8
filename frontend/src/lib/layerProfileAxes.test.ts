import { describe, expect, it } from "vitest";
import { infinityAxis, infinityCap, niceTicks } from "./layerProfileAxes";
import { LAYERS, layer, stats } from "./layerProfileFixtures";

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
