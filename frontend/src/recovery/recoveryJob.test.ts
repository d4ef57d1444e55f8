import { describe, expect, it } from "vitest";
import { planJobs, pointRecovery, recoveryMethods, recoverySource } from "./recoveryJob";

describe("recoveryMethods", () => {
  it("names the methods in the order the job runs them, with the launch form's labels", () => {
    const params = { methods: [{ name: "adaround", iterations: 50 }, { name: "bias_correction" }] };
    expect(recoveryMethods(params)).toBe("AdaRound → Bias correction");
  });

  it("keeps a name it does not know, and says when there is none", () => {
    expect(recoveryMethods({ methods: [{ name: "pruning_repair" }] })).toBe("pruning_repair");
    expect(recoveryMethods({})).toBe("no method");
  });
});

describe("recoverySource", () => {
  it("names a sweep point by its index and its sweep's short id", () => {
    const params = { sweep_point_id: "0f1e2d3c-0000-4000-8000-000000000000:5" };
    expect(recoverySource(params)).toBe("point 5 of sweep 0f1e2d3c");
  });

  it("names a sensitivity plan by its average bits and its scan", () => {
    const params = { sensitivity_plan: { job_id: "abcdef01-0000-4000-8000-000000000000", average_bits: 5.5 } };
    expect(recoverySource(params)).toBe("the 5.5-bit plan of scan abcdef01");
  });

  it("describes a configuration given as such", () => {
    const params = { config: { type: "weight_quant", bits: 4, per_channel: true } };
    expect(recoverySource(params)).toBe("4-bit weights, symmetric, per channel");
  });
});

describe("pointRecovery", () => {
  const job = (id: string, status: string, error: string | null = null) => ({ id, status, error });

  it("says never recovered when the server lists no recovery of the point", () => {
    expect(pointRecovery([])).toEqual({ state: "none" });
  });

  it("follows the newest recovery: succeeded after an older failure, still running, or failed with its reason", () => {
    expect(pointRecovery([job("b", "succeeded"), job("a", "failed", "boom")])).toEqual({
      state: "succeeded",
      jobId: "b",
      error: null,
    });
    expect(pointRecovery([job("c", "queued"), job("b", "succeeded")])).toMatchObject({ state: "running", jobId: "c" });
    expect(pointRecovery([job("d", "cancelled", "cancelled by tester")])).toEqual({
      state: "failed",
      jobId: "d",
      error: "cancelled by tester",
    });
  });
});

describe("planJobs", () => {
  const job = (id: string, params: Record<string, unknown>) => ({
    id,
    status: "succeeded" as const,
    error: null,
    params,
  });
  it("keeps the scan's recoveries of the plan with these average bits, in the server's order", () => {
    const jobs = [
      job("c", { sensitivity_plan: { job_id: "s", average_bits: 4.5 } }),
      job("b", { sensitivity_plan: { job_id: "s", average_bits: 6 } }),
      job("a", { sensitivity_plan: { job_id: "s", average_bits: 6 } }),
      job("x", { sweep_point_id: "s:1" }),
    ];
    expect(planJobs(jobs, 6).map((j) => j.id)).toEqual(["b", "a"]);
    expect(pointRecovery(planJobs(jobs, 4.5))).toEqual({ state: "succeeded", jobId: "c", error: null });
    expect(pointRecovery(planJobs(jobs, 5))).toEqual({ state: "none" });
  });
});
