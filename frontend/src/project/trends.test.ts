import { describe, expect, it } from "vitest";
import type { TrendPoint } from "./trendQueries";
import { latestIsWorse, pointLabel } from "./trends";

function point(headline: Partial<TrendPoint["headline"]>, tags: string[] = []): TrendPoint {
  return {
    job_id: "j",
    job_name: "",
    job_tags: tags,
    created_at: "2026-01-01T00:00:00Z",
    finished_at: "2026-01-01T00:00:00Z",
    compressed: { id: "m", name: "int8", tags: ["v2"] },
    dataset: { id: "d", name: "digits" },
    n_samples: 10,
    headline: { output: "logits", ...headline },
  };
}

describe("latestIsWorse", () => {
  it("flags a drop in agreement beyond the threshold, not within it", () => {
    expect(latestIsWorse([point({ top1_match: 0.99 }), point({ top1_match: 0.97 })], "top1_match")).toBe(true);
    expect(latestIsWorse([point({ top1_match: 0.99 }), point({ top1_match: 0.988 })], "top1_match")).toBe(false);
    expect(latestIsWorse([point({ top1_match: 0.97 }), point({ top1_match: 0.99 })], "top1_match")).toBe(false);
  });
  it("reads divergences as lower-is-better and relative", () => {
    expect(latestIsWorse([point({ kl_mean_nats: 0.01 }), point({ kl_mean_nats: 0.0105 })], "kl_mean_nats")).toBe(false);
    expect(latestIsWorse([point({ kl_mean_nats: 0.01 }), point({ kl_mean_nats: 0.02 })], "kl_mean_nats")).toBe(true);
  });
  it("skips runs without the metric and needs two values", () => {
    expect(latestIsWorse([point({ sqnr_db: 30 }), point({ sqnr_db: null }), point({ sqnr_db: 25 })], "sqnr_db")).toBe(
      true,
    );
    expect(latestIsWorse([point({ sqnr_db: 30 })], "sqnr_db")).toBe(false);
  });
});

describe("pointLabel", () => {
  it("names the compressed model with its and the job's tags", () => {
    expect(pointLabel(point({}, ["nightly"]))).toBe("int8 [v2, nightly]");
  });
});
