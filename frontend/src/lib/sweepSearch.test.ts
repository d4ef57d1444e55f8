import { describe, expect, it } from "vitest";
import { condition, NO_SEARCH, searchParams } from "./sweepSearch";

describe("searchParams", () => {
  it("sends nothing without a scan", () => {
    expect(searchParams(NO_SEARCH)).toBeNull();
  });
  it("builds the API's search block", () => {
    expect(
      searchParams({
        ...NO_SEARCH,
        scan: "s1",
        high: "float",
        direction: "at_most",
        metric: "kl_mean",
        threshold: " 0.01 ",
      }),
    ).toEqual({
      sensitivity_job_id: "s1",
      metric: "kl_mean",
      threshold: 0.01,
      direction: "at_most",
      low: { type: "weight_quant", bits: 4, per_channel: true },
      high: null,
    });
    expect(searchParams({ ...NO_SEARCH, scan: "s1" })).toMatchObject({ direction: null, threshold: 0.99 });
  });
  it("refuses a threshold that is not a number", () => {
    expect(searchParams({ ...NO_SEARCH, scan: "s1", threshold: "" })).toMatch(/threshold/);
    expect(searchParams({ ...NO_SEARCH, scan: "s1", threshold: "ninety" })).toMatch(/threshold/);
  });
  it("says the condition", () => {
    expect(condition("top1_agreement", "at_least", 0.99)).toBe("top1_agreement ≥ 0.99");
    expect(condition("kl_mean", "at_most", 0.01)).toBe("kl_mean ≤ 0.01");
  });
});
