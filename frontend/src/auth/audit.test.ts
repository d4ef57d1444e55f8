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

describe("an audit event's target, named by the API now (target_name)", () => {
  it("reads the current name, even where the event recorded none (a tag change)", () => {
    const event = { ...base, action: "model.updated", resource_type: "model", detail: { tags: ["int8"] } };
    expect(auditTarget({ ...event, target_name: "digits-cnn int8" })).toEqual({
      text: "model digits-cnn int8",
      route: { page: "model", modelId: "r0123456789" },
    });
    expect(
      auditTarget({
        ...base,
        action: "job.launched",
        resource_type: "job",
        detail: { kind: "recovery" },
        target_name: "recovery of cnn",
      }),
    ).toEqual({ text: "job recovery of cnn", route: { page: "recovery", jobId: "r0123456789" } });
  });

  it("marks a deleted target and names it as recorded, else by its id, linking its project", () => {
    const deleted = { ...base, resource_type: "model", target_name: null };
    expect(auditTarget({ ...deleted, action: "model.uploaded", detail: { name: "tmp" } })).toEqual({
      text: "model tmp (deleted)",
      route: { page: "project", projectId: "p1" },
    });
    expect(auditTarget({ ...deleted, action: "model.updated", detail: { tags: [] } }).text).toBe(
      "model r0123456 (deleted)",
    );
    expect(
      auditTarget({
        ...base,
        action: "job.launched",
        resource_type: "job",
        detail: { kind: "sweep" },
        target_name: null,
      }),
    ).toEqual({ text: "sweep job r0123456 (deleted)", route: { page: "project", projectId: "p1" } });
  });

  it("names budgets (with a rename) and alerts by their budget", () => {
    expect(
      auditTarget({
        ...base,
        action: "budget.updated",
        resource_type: "budget",
        detail: { name: "release gate", before: "release" },
        target_name: "release gate",
      }),
    ).toEqual({ text: "budget release gate (was release)", route: { page: "project", projectId: "p1" } });
    expect(
      auditTarget({
        ...base,
        action: "budget.deleted",
        resource_type: "budget",
        detail: { name: "old" },
        target_name: null,
      }).text,
    ).toBe("budget old (deleted)");
    expect(
      auditTarget({
        ...base,
        action: "alert.acknowledged",
        resource_type: "alert",
        detail: { budget_name: "strict" },
        target_name: "strict",
      }).text,
    ).toBe("alert of budget strict");
  });
});
