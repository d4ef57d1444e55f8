import { describe, expect, it } from "vitest";
import { DEFAULT_SAMPLE_QUERY, href, parseHash, type Route } from "./route";

describe("hash routes", () => {
  it("round-trips every page", () => {
    const routes: Route[] = [
      { page: "projects" },
      { page: "project", projectId: "p1" },
      { page: "compare", projectId: "p1" },
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

  it("falls back to defaults for bad query values and reports unknown paths", () => {
    const route = parseHash("#/jobs/j1?sort=drop&limit=7&offset=-3&sample=x");
    expect(route).toEqual({ page: "report", jobId: "j1", query: DEFAULT_SAMPLE_QUERY });
    expect(parseHash("")).toEqual({ page: "projects" });
    expect(parseHash("#/nowhere/1")).toEqual({ page: "notFound", path: "/nowhere/1" });
  });
});
