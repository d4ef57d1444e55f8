import { describe, expect, it } from "vitest";
import { DEFAULT_SAMPLE_QUERY, DEFAULT_SWEEP_QUERY } from "../lib/route";
import { auditTarget } from "./audit";

const base = { resource_id: "r0123456789", project_id: "p1", detail: {} };

describe("an audit event's target", () => {
  it("names uploads and links them", () => {
    expect(
      auditTarget({
        ...base,
        action: "model.uploaded",
        resource_type: "model",
        detail: { name: "int8", size_bytes: 3 },
      }),
    ).toEqual({ text: "model int8", route: { page: "model", modelId: "r0123456789" } });
    expect(
      auditTarget({ ...base, action: "dataset.uploaded", resource_type: "dataset", detail: { name: "digits" } }),
    ).toEqual({ text: "dataset digits", route: { page: "project", projectId: "p1" } });
  });

  it("links a deleted model to its project, not to its gone page", () => {
    expect(auditTarget({ ...base, action: "model.deleted", resource_type: "model", detail: { name: "int8" } })).toEqual(
      { text: "model int8", route: { page: "project", projectId: "p1" } },
    );
  });

  it("opens a job on the page of its kind", () => {
    expect(
      auditTarget({ ...base, action: "job.launched", resource_type: "job", detail: { kind: "fidelity" } }),
    ).toEqual({
      text: "fidelity job r0123456",
      route: { page: "report", jobId: "r0123456789", query: DEFAULT_SAMPLE_QUERY },
    });
    expect(
      auditTarget({ ...base, action: "job.cancelled", resource_type: "job", detail: { kind: "sweep" } }).route,
    ).toEqual({ page: "sweep", jobId: "r0123456789", query: DEFAULT_SWEEP_QUERY });
    expect(
      auditTarget({ ...base, action: "job.launched", resource_type: "job", detail: { kind: "inspect" } }).route,
    ).toEqual({ page: "project", projectId: "p1" });
    expect(
      auditTarget({ ...base, action: "job.deleted", resource_type: "job", detail: { kind: "sweep" } }).route,
    ).toEqual({ page: "project", projectId: "p1" });
  });

  it("says which member changed how", () => {
    const member = { ...base, project_id: null, resource_type: "user" };
    expect(
      auditTarget({
        ...member,
        action: "member.role_changed",
        detail: { username: "ada", before: "viewer", after: "admin" },
      }),
    ).toEqual({ text: "user ada: viewer → admin", route: null });
    expect(auditTarget({ ...member, action: "member.added", detail: { username: "bob", role: "member" } })).toEqual({
      text: "user bob (member)",
      route: null,
    });
  });

  it("falls back to a short id without a name", () => {
    expect(auditTarget({ ...base, action: "project.created", resource_type: "project", detail: {} })).toEqual({
      text: "project r0123456",
      route: { page: "project", projectId: "r0123456789" },
    });
    expect(auditTarget({ ...base, project_id: null, action: "team.created", resource_type: "team" }).route).toBeNull();
  });
});
