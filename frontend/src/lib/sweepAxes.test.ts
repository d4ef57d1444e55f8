import { describe, expect, it } from "vitest";
import { buildAxis, canLog, logTicks, shortBytes } from "./sweepAxes";

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
