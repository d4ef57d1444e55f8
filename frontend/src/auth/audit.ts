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
] as const;

/** Events per page of the audit table. */
export const AUDIT_PAGE = 25;

/** What an event was about, in words, and the page to open it on (null: gone, or no page for it). */
export interface AuditTarget {
  text: string;
  route: Route | null;
}

type EventFields = Pick<AuditEvent, "action" | "resource_type" | "resource_id" | "project_id" | "detail">;

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

const shortId = (id: string): string => id.slice(0, 8);

function jobRoute(jobId: string, kind: string | null, projectId: string | null): Route | null {
  if (kind === "fidelity") return { page: "report", jobId, query: DEFAULT_SAMPLE_QUERY };
  if (kind === "sensitivity") return { page: "sensitivity", jobId, query: DEFAULT_SENSITIVITY_QUERY };
  if (kind === "sweep") return { page: "sweep", jobId, query: DEFAULT_SWEEP_QUERY };
  return projectId ? { page: "project", projectId } : null;
}

export function auditTarget(event: EventFields): AuditTarget {
  const { action, resource_type: type, resource_id: id, project_id: projectId, detail } = event;
  const deleted = action.endsWith(".deleted");
  const name = text(detail.name) ?? text(detail.username);
  const projectRoute: Route | null = projectId ? { page: "project", projectId } : null;
  switch (type) {
    case "project":
      return { text: `project ${name ?? shortId(id)}`, route: { page: "project", projectId: id } };
    case "model":
      return { text: `model ${name ?? shortId(id)}`, route: deleted ? projectRoute : { page: "model", modelId: id } };
    case "dataset":
      return { text: `dataset ${name ?? shortId(id)}`, route: projectRoute };
    case "job": {
      const kind = text(detail.kind);
      return {
        text: `${kind ?? ""} job ${shortId(id)}`.trim(),
        route: deleted ? projectRoute : jobRoute(id, kind, projectId),
      };
    }
    case "user": {
      const who = `user ${name ?? shortId(id)}`;
      const before = text(detail.before);
      const after = text(detail.after);
      if (before && after) return { text: `${who}: ${before} → ${after}`, route: null };
      const role = text(detail.role);
      return { text: role ? `${who} (${role})` : who, route: null };
    }
    case "team":
      return { text: `team ${name ?? shortId(id)}`, route: null };
    default:
      return { text: `${type} ${name ?? shortId(id)}`, route: projectRoute };
  }
}
