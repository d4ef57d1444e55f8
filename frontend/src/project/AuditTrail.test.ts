import { describe, expect, it } from "vitest";
import { NO_AUDIT_FILTERS, auditCsvHref, auditQuery } from "./AuditTrail";

describe("auditQuery", () => {
  it("sends nothing for no filters", () => {
    expect(auditQuery(null, NO_AUDIT_FILTERS)).toEqual({});
  });
  it("makes whole UTC days of a date range, the last day included, across a month end", () => {
    expect(
      auditQuery("job.launched", { actor: " ada ", projectId: "p1", from: "2026-11-30", to: "2026-11-30" }),
    ).toEqual({ action: "job.launched", actor: "ada", project_id: "p1", since: "2026-11-30", until: "2026-12-01" });
    expect(auditQuery(null, { ...NO_AUDIT_FILTERS, to: "2026-12-31" }).until).toBe("2027-01-01");
  });
});

describe("auditCsvHref", () => {
  it("carries the same query", () => {
    expect(auditCsvHref("t 1", { actor: "ada", since: "2026-12-01" })).toBe(
      "/api/v1/teams/t%201/audit.csv?actor=ada&since=2026-12-01",
    );
    expect(auditCsvHref("t", {})).toBe("/api/v1/teams/t/audit.csv");
  });
});
