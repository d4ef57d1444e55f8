// The audit trail's vocabulary and how one event reads in the team page's table.
import type { AuditEvent } from "../api/types";
import { DEFAULT_SAMPLE_QUERY, DEFAULT_SENSITIVITY_QUERY, DEFAULT_SWEEP_QUERY, type Route } from "../lib/route";

/** Every action the API records (backend/audit.py AuditAction), for the filter. */
export const AUDIT_ACTIONS = [
  "project.created",
  "model.uploaded",
  "model.deleted",
  "dataset.uploaded",
  "dataset.deleted",
  "job.launched",
  "job.cancelled",
  "job.deleted",
  "team.created",
  "member.added",
  "member.role_changed",
  "member.removed",
  "budget.created",
  "budget.updated",
  "budget.deleted",
  "alert.acknowledged",
] as const;

/** Events per page of the audit table. */
export const AUDIT_PAGE = 25;

/** What an event was about, in words, and the page to open it on (null: gone, or no page for it). */
export interface AuditTarget {
  text: string;
  route: Route | null;
}

type EventFields = Pick<
  AuditEvent,
  "action" | "resource_type" | "resource_id" | "project_id" | "detail" | "target_name"
>;

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

const shortId = (id: string): string => id.slice(0, 8);

function jobRoute(jobId: string, kind: string | null, projectId: string | null): Route | null {
  if (kind === "fidelity") return { page: "report", jobId, query: DEFAULT_SAMPLE_QUERY };
  if (kind === "sensitivity") return { page: "sensitivity", jobId, query: DEFAULT_SENSITIVITY_QUERY };
  if (kind === "sweep") return { page: "sweep", jobId, query: DEFAULT_SWEEP_QUERY };
  if (kind === "recovery") return { page: "recovery", jobId };
  return projectId ? { page: "project", projectId } : null;
}

/** The event's target by the name the API resolved now (`target_name`: "model digits-cnn int8"); once the
 * target is deleted (null), by the name the event recorded then, else its short id, marked "(deleted)". */
export function auditTarget(event: EventFields): AuditTarget {
  const { resource_type: type, resource_id: id, project_id: projectId, detail } = event;
  const current = event.target_name ?? null;
  // null: deleted since. An event read without target_name (undefined) is named as it was recorded.
  const marked = event.target_name === null;
  const gone = marked || event.action.endsWith(".deleted");
  const recorded = text(detail.name) ?? text(detail.username) ?? text(detail.budget_name);
  const called = (fallback: string) => current ?? `${recorded ?? fallback}${marked ? " (deleted)" : ""}`;
  const projectRoute: Route | null = projectId ? { page: "project", projectId } : null;
  switch (type) {
    case "project":
      return { text: `project ${called(shortId(id))}`, route: gone ? null : { page: "project", projectId: id } };
    case "model":
      return { text: `model ${called(shortId(id))}`, route: gone ? projectRoute : { page: "model", modelId: id } };
    case "dataset":
      return { text: `dataset ${called(shortId(id))}`, route: projectRoute };
    case "job": {
      const kind = text(detail.kind);
      const label = current ? `job ${current}` : `${kind ?? ""} job ${shortId(id)}${marked ? " (deleted)" : ""}`.trim();
      return { text: label, route: gone ? projectRoute : jobRoute(id, kind, projectId) };
    }
    case "user": {
      const who = `user ${called(shortId(id))}`;
      const before = text(detail.before);
      const after = text(detail.after);
      if (before && after) return { text: `${who}: ${before} → ${after}`, route: null };
      const role = text(detail.role);
      return { text: role ? `${who} (${role})` : who, route: null };
    }
    case "team":
      return { text: `team ${called(shortId(id))}`, route: null };
    case "budget": {
      const before = text(detail.before);
      const renamed = before && before !== (current ?? recorded) ? ` (was ${before})` : "";
      return { text: `budget ${called(shortId(id))}${renamed}`, route: projectRoute };
    }
    case "alert":
      return { text: `alert of budget ${called(shortId(id))}`, route: projectRoute };
    default:
      return { text: `${type} ${called(shortId(id))}`, route: projectRoute };
  }
}
