import { describe, expect, it } from "vitest";
import { NO_AUDIT_FILTERS, auditCsvHref, auditQuery } from "./AuditTrail";

describe("auditQuery", () => {
  it("sends nothing for no filters", () => {
    expect(auditQuery(null, NO_AUDIT_FILTERS)).toEqual({});
  });
  it("makes whole local days of a date range (as the table shows times), the last day included, across a month end", () => {
    expect(
      auditQuery("job.launched", { actor: " ada ", projectId: "p1", from: "2026-11-30", to: "2026-11-30" }),
    ).toEqual({
      action: "job.launched",
      actor: "ada",
      project_id: "p1",
      since: new Date(2026, 10, 30).toISOString(),
      until: new Date(2026, 11, 1).toISOString(),
    });
    expect(auditQuery(null, { ...NO_AUDIT_FILTERS, to: "2026-12-31" }).until).toBe(new Date(2027, 0, 1).toISOString());
    // what the API reads: an ISO instant whose local day is the one typed
    const since = new Date(auditQuery(null, { ...NO_AUDIT_FILTERS, from: "2026-12-07" }).since ?? "");
    expect([since.getFullYear(), since.getMonth() + 1, since.getDate(), since.getHours()]).toEqual([2026, 12, 7, 0]);
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
