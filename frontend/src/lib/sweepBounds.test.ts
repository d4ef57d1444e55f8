import { describe, expect, it } from "vitest";
import { boundParams, boundSpecs, sliderScale, withinBounds } from "./sweepBounds";
import { ROWS } from "./sweepFixtures";

describe("bounds", () => {
  const specs = boundSpecs(
    { maxKl: 0.01, minTop1: 0.99, maxSize: null, maxLatency: 1, maxMemory: null, taskLimit: null },
    1,
  );

  it("become the API's bound parameters", () => {
    expect(boundParams(specs)).toEqual(["kl_mean<=0.01", "top1_agreement>=0.99", "latency_p50_ms_b1<=1"]);
    expect(
      boundSpecs({ maxKl: null, minTop1: null, maxSize: null, maxLatency: 2, maxMemory: null, taskLimit: null }, null),
    ).toEqual([]);
    expect(
      boundParams(
        boundSpecs(
          { maxKl: 1e-7, minTop1: null, maxSize: 4096, maxLatency: null, maxMemory: null, taskLimit: null },
          1,
        ),
      ),
    ).toEqual(["kl_mean<=1e-7", "size_bytes<=4096"]);
  });

  it("bound the run-time memory in MiB", () => {
    const memory = boundSpecs(
      { maxKl: null, minTop1: null, maxSize: null, maxLatency: null, maxMemory: 12.5, taskLimit: null },
      1,
    );
    expect(boundParams(memory)).toEqual(["runtime_memory_mib<=12.5"]);
    expect(withinBounds({ runtime_memory_mib: 12.5 }, memory)).toBe(true);
    expect(withinBounds({ runtime_memory_mib: 12.6 }, memory)).toBe(false);
    expect(withinBounds({ runtime_memory_mib: null }, memory)).toBe(false);
  });

  it("are inclusive, and a missing value is outside (as the API excludes it)", () => {
    expect(ROWS.map((r) => withinBounds(r.objectives, specs))).toEqual([true, false, true, false]);
    expect(withinBounds({ kl_mean: 0.01 }, [{ objective: "kl_mean", atMost: 0.01, atLeast: null }])).toBe(true);
    expect(withinBounds({}, [])).toBe(true);
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
