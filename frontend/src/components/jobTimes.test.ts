import { describe, expect, it } from "vitest";
import { jobTimes } from "./jobTimes";

const at = (s: number) => new Date(Date.UTC(2026, 11, 3, 12, 0, s)).toISOString();
const now = Date.UTC(2026, 11, 3, 12, 0, 50);

describe("jobTimes", () => {
  it("splits a finished job into its queue wait and its run time", () => {
    const t = jobTimes({ status: "succeeded", created_at: at(0), started_at: at(33), finished_at: at(35) }, now);
    expect(t.queueWait).toBeCloseTo(33);
    expect(t.runTime).toBeCloseTo(2);
    expect(t.waiting || t.running).toBe(false);
  });
  it("counts a queued job's wait up to now, and it has no run time yet", () => {
    const t = jobTimes({ status: "queued", created_at: at(20), started_at: null, finished_at: null }, now);
    expect(t.queueWait).toBeCloseTo(30);
    expect(t.runTime).toBeNull();
    expect(t.waiting).toBe(true);
  });
  it("counts a running job's time up to now", () => {
    const t = jobTimes({ status: "running", created_at: at(0), started_at: at(10), finished_at: null }, now);
    expect([t.queueWait, t.runTime, t.running]).toEqual([10, 40, true]);
  });
  it("has neither for a job cancelled before a worker took it", () => {
    const t = jobTimes({ status: "cancelled", created_at: at(0), started_at: null, finished_at: at(5) }, now);
    expect([t.queueWait, t.runTime]).toEqual([null, null]);
  });
});
