import { describe, expect, it } from "vitest";
import { jobCrumbs, jobPageHref } from "./jobPages";
import { parseHash } from "./route";

describe("jobPageHref", () => {
  it("links each kind with a page to that page, with its default view", () => {
    const pages = ["fidelity", "sensitivity", "sweep", "recovery"].map((kind) => {
      const link = jobPageHref("j-1", kind);
      expect(link).not.toBeNull();
      return parseHash(link ?? "");
    });
    expect(pages.map((r) => [r.page, "jobId" in r ? r.jobId : null])).toEqual([
      ["report", "j-1"],
      ["sensitivity", "j-1"],
      ["sweep", "j-1"],
      ["recovery", "j-1"],
    ]);
  });

  it("has no page for kinds shown only in the jobs table", () => {
    expect(jobPageHref("j-1", "inspect")).toBeNull();
  });
});

describe("jobCrumbs", () => {
  it("names the project once the job is known, and links it", () => {
    const crumbs = jobCrumbs("p-1", "Vision", "Sweep");
    expect(crumbs.map((c) => c.label)).toEqual(["Projects", "Vision", "Sweep"]);
    expect(parseHash(crumbs[1]?.href ?? "")).toEqual({ page: "project", projectId: "p-1" });
    expect(crumbs[2]?.href).toBeUndefined();
  });

  it("has a placeholder without a link before", () => {
    const crumbs = jobCrumbs("", undefined, "Sweep");
    expect(crumbs[1]).toEqual({ label: "Project", href: undefined });
  });
});
