// How a recovery job is named where it is listed (the jobs table's What column, the recovery page's facts):
// its methods in the order they run, the model it recovers, and what it recovers (a configuration, a sweep's
// point or a sensitivity scan's mixed-precision plan), and whether a sweep point was recovered. Pure functions
// over the jobs' parameters and statuses (tested).
import type { Job } from "../api/types";
import { isObject } from "../lib/json";
import { describeConfig } from "../lib/sensitivity";
import { METHOD_LABELS, type MethodName } from "./training";

const isMethod = (name: unknown): name is MethodName => typeof name === "string" && name in METHOD_LABELS;

/** "AdaRound → Bias correction": the methods as the job runs them (an unknown name as it is stored). */
export function recoveryMethods(params: Record<string, unknown>): string {
  const methods = Array.isArray(params.methods) ? params.methods : [];
  const names = methods.map((m) => (isObject(m) ? m.name : null));
  return names.map((n) => (isMethod(n) ? METHOD_LABELS[n] : String(n))).join(" → ") || "no method";
}

/** What the job recovers: "point 3 of sweep 1a2b3c4d", "the 5.5-bit plan of scan 1a2b3c4d" or the
 * configuration in words. */
export function recoverySource(params: Record<string, unknown>): string {
  const point = params.sweep_point_id;
  if (typeof point === "string") {
    const [sweep = "", index = "?"] = point.split(":");
    return `point ${index} of sweep ${sweep.slice(0, 8)}`;
  }
  const plan = params.sensitivity_plan;
  if (isObject(plan)) {
    const bits = typeof plan.average_bits === "number" ? plan.average_bits.toString() : "?";
    const scan = typeof plan.job_id === "string" ? plan.job_id.slice(0, 8) : "?";
    return `the ${bits}-bit plan of scan ${scan}`;
  }
  return isObject(params.config) ? describeConfig(params.config) : "?";
}

export type PointRecovery =
  { state: "none" } | { state: "running" | "succeeded" | "failed"; jobId: string; error: string | null };

/** What a sweep point's recoveries (newest first, as GET /jobs?sweep_point_id gives them) say about it: the
 * newest one decides (running, succeeded, or failed/cancelled with its reason), none: never recovered. */
export function pointRecovery(jobs: readonly Pick<Job, "id" | "status" | "error">[]): PointRecovery {
  const newest = jobs[0];
  if (!newest) return { state: "none" };
  const state =
    newest.status === "queued" || newest.status === "running"
      ? "running"
      : newest.status === "succeeded"
        ? "succeeded"
        : "failed";
  return { state, jobId: newest.id, error: newest.error ?? null };
}

/** A sensitivity scan's recoveries (newest first) narrowed to the plan with `averageBits`: what
 * `pointRecovery` then reads for "Recover this plan". */
export function planJobs<J extends Pick<Job, "params">>(jobs: readonly J[], averageBits: number): J[] {
  return jobs.filter((job) => {
    const plan = (job.params as { sensitivity_plan?: { average_bits?: unknown } } | null)?.sensitivity_plan;
    return plan?.average_bits === averageBits;
  });
}
