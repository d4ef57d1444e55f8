import { describe, expect, it } from "vitest";
import type { TrendPoint } from "./trendQueries";
import {
  fractionRange,
  latestIsWorse,
  latestVerdict,
  metricValue,
  pointLabel,
  ruleText,
  specOf,
  trendMetricOptions,
} from "./trends";

function point(
  headline: Partial<TrendPoint["headline"]>,
  tags: string[] = [],
  standardErrors: Partial<TrendPoint["standard_errors"]> = {},
): TrendPoint {
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
    standard_errors: standardErrors,
  };
}

/** Binomial standard error √(p(1−p)/n), as the API serves it for shares. */
function binomialSe(p: number, n: number): number {
  return Math.sqrt((p * (1 - p)) / n);
}

describe("latestVerdict with standard errors", () => {
  it("flags a drop only beyond 2·√(se_prev² + se_last²)", () => {
    // 360 samples: top-1 agreement 0.97 vs 0.95 has se ≈ 0.0090 / 0.0115, a limit of ≈ 0.0292 > 0.02
    const run = (p: number, n: number) => point({ top1_match: p }, [], { top1_match: binomialSe(p, n) });
    const small = latestVerdict([run(0.97, 360), run(0.95, 360)], "top1_match");
    expect(small.basis).toBe("noise");
    expect(small.limit).toBeCloseTo(2 * Math.hypot(binomialSe(0.97, 360), binomialSe(0.95, 360)), 12);
    expect(small.worse).toBe(false);
    // the same drop on 10,000 samples is far outside the noise (limit ≈ 0.0055)
    expect(latestVerdict([run(0.97, 10000), run(0.95, 10000)], "top1_match").worse).toBe(true);
    // the old fixed 0.5 pp would have flagged a 1 pp drop on 360 samples; the noise does not
    expect(latestVerdict([run(0.97, 360), run(0.96, 360)], "top1_match").worse).toBe(false);
  });
  it("uses the served spread for divergences, in their own units", () => {
    const run = (kl: number, se: number) => point({ kl_mean_nats: kl }, [], { kl_mean_nats: se });
    // +50 % KL (fixed rule: worse) inside two noisy runs' spread: not worse
    expect(latestVerdict([run(0.01, 0.004), run(0.015, 0.004)], "kl_mean_nats").worse).toBe(false);
    // +5 % KL (fixed rule: not worse) on very precise runs: worse
    expect(latestVerdict([run(0.01, 0.0001), run(0.0105, 0.0001)], "kl_mean_nats").worse).toBe(true);
    // improving is never worse
    expect(latestVerdict([run(0.02, 0.0001), run(0.01, 0.0001)], "kl_mean_nats").worse).toBe(false);
  });
  it("falls back to the fixed threshold when either run has no spread, and says so", () => {
    const withSe = point({ top1_match: 0.99 }, [], { top1_match: 0.0001 });
    const withoutSe = point({ top1_match: 0.97 });
    const verdict = latestVerdict([withSe, withoutSe], "top1_match");
    expect(verdict.basis).toBe("fixed");
    expect(verdict.limit).toBe(0.005);
    expect(verdict.worse).toBe(true);
    expect(latestVerdict([point({ js_mean_nats: 0.1 })], "js_mean_nats").basis).toBe("none");
  });
});

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

describe("ruleText", () => {
  it("says which rule decided, and that a fixed threshold is a judgement", () => {
    const se = (v: number, e: number | null) => point({ kl_mean_nats: v }, [], { kl_mean_nats: e });
    expect(ruleText([se(0.01, 0.003), se(0.02, 0.004)], "kl_mean_nats")).toMatch(
      /Bars are ±2 standard errors\. .*2·√\(se_prev² \+ se_last²\) = 0\.0100,/,
    );
    expect(ruleText([se(0.01, null), se(0.02, 0.004)], "kl_mean_nats")).toMatch(
      /fixed 10 % of the previous value: one of the two runs has no per-sample spread stored, so this threshold is a judgement/,
    );
    expect(ruleText([point({ js_mean_nats: 0.1 }), point({ js_mean_nats: 0.2 })], "js_mean_nats")).toMatch(
      /no per-sample spread for Mean JS \(nats\), so this threshold is a judgement/,
    );
    expect(ruleText([se(0.01, 0.003)], "kl_mean_nats")).toMatch(/^Bars are ±2 standard errors\. With a second run/);
    expect(ruleText([point({ ece_shift: 0.02 })], "ece_shift")).toMatch(
      /^With a second run.*fixed 0.01 \(no per-sample spread/,
    );
  });
});

describe("pointLabel", () => {
  it("names the compressed model with its and the job's tags", () => {
    expect(pointLabel(point({}, ["nightly"]))).toBe("int8 [v2, nightly]");
  });
});

describe("fractionRange", () => {
  it("keeps a share's axis inside 0..1 even when every run agrees fully", () => {
    const [low, high] = fractionRange([1, 1, 1]);
    expect(low).toBeGreaterThanOrEqual(0.97);
    expect(low).toBeLessThan(1);
    expect(high).toBeLessThan(1.01);
    expect(fractionRange([0.5, 0.9, null])).toEqual([0.45, 1.005]);
    expect(fractionRange([0.01])[0]).toBe(0);
  });
});

describe("task metrics in trends", () => {
  const det = (map50Drop: number | null, vsGolden: number) =>
    point({
      task: {
        name: "detection",
        metrics: [
          { metric: "map50_vs_golden", value: vsGolden, higher_is_better: true },
          { metric: "map50_drop", value: map50Drop, higher_is_better: false },
          { metric: "map_drop", value: null, higher_is_better: false },
        ],
      },
    });

  it("offers the task metrics some run has a value of, after the divergence ones", () => {
    const options = trendMetricOptions([point({}), det(1.0, 0.9)]);
    const keys = options.map((o) => o.key);
    expect(keys.slice(-2)).toEqual(["task.map50_vs_golden", "task.map50_drop"]);
    expect(keys).toContain("top1_match");
    expect(keys).not.toContain("task.map_drop"); // no run has a value
  });

  it("reads a task metric's value and direction from the headline, with a fixed threshold in its unit", () => {
    const points = [det(1.0, 0.9), det(1.7, 0.9)];
    expect(metricValue(points[1] as TrendPoint, "task.map50_drop")).toBe(1.7);
    const spec = specOf("task.map50_drop", points);
    expect(spec.higherIsBetter).toBe(false);
    expect([spec.threshold, spec.relative, spec.spread]).toEqual([0.5, false, false]);
    // a 0.7-point rise of the mAP@.5 drop is worse beyond the 0.5-point threshold; 0.3 is not
    expect(latestVerdict(points, "task.map50_drop")).toEqual({ worse: true, basis: "fixed", limit: 0.5 });
    expect(latestVerdict([det(1.0, 0.9), det(1.3, 0.9)], "task.map50_drop").worse).toBe(false);
    // a share that falls: worse beyond half a percent, on a 0..1 axis
    const share = specOf("task.map50_vs_golden", points);
    expect([share.higherIsBetter, share.fraction, share.threshold]).toEqual([true, true, 0.005]);
    expect(latestVerdict([det(1, 0.95), det(1, 0.9)], "task.map50_vs_golden").worse).toBe(true);
    expect(ruleText(points, "task.map50_drop")).toContain("a judgement, not measured noise");
  });
});
