import { describe, expect, it } from "vitest";
import {
  DEFAULT_AUDIT_QUERY,
  DEFAULT_COMPARE_QUERY,
  DEFAULT_SAMPLE_QUERY,
  DEFAULT_SENSITIVITY_QUERY,
  DEFAULT_SWEEP_QUERY,
  href,
  parseHash,
  type Route,
} from "./route";

describe("hash routes", () => {
  it("round-trips every page", () => {
    const routes: Route[] = [
      { page: "projects" },
      { page: "account" },
      { page: "users" },
      { page: "team", teamId: "t1", query: DEFAULT_AUDIT_QUERY },
      { page: "team", teamId: "t1", query: { action: "job.launched", offset: 50 } },
      { page: "project", projectId: "p1" },
      { page: "compare", projectId: "p1", query: DEFAULT_COMPARE_QUERY },
      {
        page: "compare",
        projectId: "p1",
        query: { ...DEFAULT_COMPARE_QUERY, jobs: ["j1", "j2"], config: "w4-sym-tensor" },
      },
      {
        page: "compare",
        projectId: "p1",
        query: {
          ...DEFAULT_COMPARE_QUERY,
          sweeps: ["s1", "s2"],
          frontier: {
            ...DEFAULT_SWEEP_QUERY,
            x: "bops",
            bounds: { ...DEFAULT_SWEEP_QUERY.bounds, maxKl: 0.01 },
            point: "s1:3",
          },
        },
      },
      { page: "sweep", jobId: "j1", query: DEFAULT_SWEEP_QUERY },
      { page: "recovery", jobId: "j1" },
      {
        page: "sweep",
        jobId: "j1",
        query: {
          x: "kl_mean",
          y: "latency_p50_ms_b32",
          xDir: "max",
          yDir: null,
          xLog: false,
          yLog: true,
          bounds: { maxKl: 1e-7, minTop1: 0.99, maxSize: 4096, maxLatency: 0.25, maxMemory: null, taskLimit: 0.005 },
          taskMetric: "task.miou_drop",
          batch: 32,
          point: "4",
          sort: "size_bytes",
          order: "desc",
        },
      },
      { page: "sensitivity", jobId: "j1", query: DEFAULT_SENSITIVITY_QUERY },
      {
        page: "sensitivity",
        jobId: "j1",
        query: { view: "all_but", ranking: "w8-sym-tensor", layer: "blocks.0/attn q&k", method: "l2" },
      },
      { page: "model", modelId: "m1" },
      { page: "report", jobId: "j1", query: DEFAULT_SAMPLE_QUERY },
      {
        page: "report",
        jobId: "j1",
        query: {
          ...DEFAULT_SAMPLE_QUERY,
          sort: "cosine",
          order: "asc",
          flagged: "yes",
          offset: 50,
          limit: 100,
          sample: 7,
        },
      },
    ];
    for (const route of routes) expect(parseHash(href(route))).toEqual(route);
  });

  it("keeps default sample settings out of the link", () => {
    expect(href({ page: "report", jobId: "j1", query: { ...DEFAULT_SAMPLE_QUERY, flipped: "no" } })).toBe(
      "#/jobs/j1?flipped=no",
    );
  });

  it("keeps sensitivity and compare links short and readable", () => {
    expect(href({ page: "sensitivity", jobId: "j1", query: { ...DEFAULT_SENSITIVITY_QUERY, layer: "conv2" } })).toBe(
      "#/jobs/j1/sensitivity?layer=conv2",
    );
    expect(href({ page: "compare", projectId: "p1" })).toBe("#/projects/p1/compare");
    expect(href({ page: "compare", projectId: "p1", query: { ...DEFAULT_COMPARE_QUERY, jobs: ["a", "b"] } })).toBe(
      "#/projects/p1/compare?jobs=a,b",
    );
    expect(
      href({
        page: "compare",
        projectId: "p1",
        query: { ...DEFAULT_COMPARE_QUERY, sweeps: ["a", "b"], frontier: { ...DEFAULT_SWEEP_QUERY, point: "a:2" } },
      }),
    ).toBe("#/projects/p1/compare?sweeps=a,b&point=a:2");
    expect(parseHash("#/jobs/j1/sensitivity?view=sideways")).toEqual({
      page: "sensitivity",
      jobId: "j1",
      query: DEFAULT_SENSITIVITY_QUERY,
    });
  });

  it("gives the account, users and team pages short links", () => {
    expect(href({ page: "account" })).toBe("#/account");
    expect(href({ page: "users" })).toBe("#/users");
    expect(href({ page: "team", teamId: "t1", query: DEFAULT_AUDIT_QUERY })).toBe("#/teams/t1");
    expect(href({ page: "team", teamId: "t1", query: { action: "model.uploaded", offset: 25 } })).toBe(
      "#/teams/t1?action=model.uploaded&offset=25",
    );
    expect(parseHash("#/teams/t1?offset=-1&action=")).toEqual({
      page: "team",
      teamId: "t1",
      query: DEFAULT_AUDIT_QUERY,
    });
    expect(parseHash("#/teams")).toEqual({ page: "notFound", path: "/teams" });
    expect(parseHash("#/account/x")).toEqual({ page: "notFound", path: "/account/x" });
  });

  it("falls back to defaults for bad query values and reports unknown paths", () => {
    const route = parseHash("#/jobs/j1?sort=drop&limit=7&offset=-3&sample=x");
    expect(route).toEqual({ page: "report", jobId: "j1", query: DEFAULT_SAMPLE_QUERY });
    expect(parseHash("")).toEqual({ page: "projects" });
    expect(parseHash("#/nowhere/1")).toEqual({ page: "notFound", path: "/nowhere/1" });
  });
});
