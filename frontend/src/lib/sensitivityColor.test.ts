import { describe, expect, it } from "vitest";
import { logColorAxis, sqnrColorAxis } from "./sensitivityColor";

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
