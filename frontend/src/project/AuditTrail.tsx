// A team's audit trail (team admins): filtered on the server by action (kept in the URL), person, project and
// days (UTC), each event with its project, and the same selection as a CSV download.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState, type SubmitEvent } from "react";
import { api, unwrap } from "../api/http";
import { authKeys } from "../api/keys";
import { useProjects } from "../api/projects";
import { AUDIT_ACTIONS, AUDIT_PAGE, auditTarget } from "../auth/audit";
import { Pager } from "../components/Pager";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { replaceRoute } from "../components/router";
import type { paths } from "../client/schema";
import { formatTime } from "../lib/format";
import { href, type AuditQuery } from "../lib/route";
import "./manage.css";

const ACTIONS = [...AUDIT_ACTIONS, "model.updated", "dataset.updated", "job.updated"];
const AUDIT_CSV = "/api/v1/teams/{team_id}/audit.csv" satisfies keyof paths;

/** Filters besides the action: a username, a project id and a range of whole days (UTC), "" when unset. */
export interface AuditFilters {
  actor: string;
  projectId: string;
  from: string; // YYYY-MM-DD, first day included
  to: string; // YYYY-MM-DD, last day included
}

export const NO_AUDIT_FILTERS: AuditFilters = { actor: "", projectId: "", from: "", to: "" };

function nextDay(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  date.setUTCDate(date.getUTCDate() + 1);
  return date.toISOString().slice(0, 10);
}

/** The API query of the filters (days become since/until: the last day's end is the next day's start). */
export function auditQuery(action: string | null, filters: AuditFilters): Record<string, string> {
  const query: Record<string, string> = {};
  if (action) query.action = action;
  if (filters.actor.trim()) query.actor = filters.actor.trim();
  if (filters.projectId) query.project_id = filters.projectId;
  if (filters.from) query.since = filters.from;
  if (filters.to) query.until = nextDay(filters.to);
  return query;
}

export const auditCsvHref = (teamId: string, query: Record<string, string>): string => {
  const text = new URLSearchParams(query).toString();
  return `${AUDIT_CSV.replace("{team_id}", encodeURIComponent(teamId))}${text ? `?${text}` : ""}`;
};

function useAuditPage(teamId: string, query: Record<string, string>, offset: number) {
  return useQuery({
    queryKey: [...authKeys.audit(teamId), query, offset],
    queryFn: () =>
      unwrap(
        api.GET("/api/v1/teams/{team_id}/audit", {
          params: { path: { team_id: teamId }, query: { ...query, offset, limit: AUDIT_PAGE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

function Filters({ teamId, onApply }: { teamId: string; onApply: (f: AuditFilters) => void }) {
  const projects = useProjects();
  const [draft, setDraft] = useState<AuditFilters>(NO_AUDIT_FILTERS);
  const set = (change: Partial<AuditFilters>) => {
    setDraft({ ...draft, ...change });
  };
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    onApply(draft);
  };
  return (
    <form className="job-filters" role="search" aria-label="Filter the audit trail" onSubmit={submit}>
      <label>
        Who
        <input
          value={draft.actor}
          placeholder="username"
          onChange={(e) => {
            set({ actor: e.target.value });
          }}
        />
      </label>
      <label>
        Project
        <select
          value={draft.projectId}
          onChange={(e) => {
            set({ projectId: e.target.value });
          }}
        >
          <option value="">any</option>
          {projects.data
            ?.filter((p) => p.team_id === teamId)
            .map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
        </select>
      </label>
      <label>
        From
        <input
          type="date"
          value={draft.from}
          onChange={(e) => {
            set({ from: e.target.value });
          }}
        />
      </label>
      <label>
        To
        <input
          type="date"
          value={draft.to}
          onChange={(e) => {
            set({ to: e.target.value });
          }}
        />
      </label>
      <button type="submit" className="small">
        Filter
      </button>
    </form>
  );
}

export function AuditTrail({ teamId, query }: { teamId: string; query: AuditQuery }) {
  const [filters, setFilters] = useState<AuditFilters>(NO_AUDIT_FILTERS);
  const apiQuery = auditQuery(query.action, filters);
  const events = useAuditPage(teamId, apiQuery, query.offset);
  const go = (next: AuditQuery) => {
    replaceRoute({ page: "team", teamId, query: next });
  };
  return (
    <section className="panel" aria-labelledby="audit-heading">
      <div className="launch-head">
        <h2 id="audit-heading">Audit trail</h2>
        <label className="inline">
          Action
          <select
            value={query.action ?? ""}
            onChange={(e) => {
              go({ action: e.target.value || null, offset: 0 });
            }}
          >
            <option value="">all actions</option>
            {ACTIONS.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
      </div>
      <p className="muted small-text">
        Who uploaded, launched, cancelled, deleted and changed what, in which project, newest first. Days are UTC.{" "}
        <a href={auditCsvHref(teamId, apiQuery)} download>
          Download these events as CSV
        </a>
      </p>
      <Filters
        teamId={teamId}
        onApply={(next) => {
          setFilters(next);
          if (query.offset > 0) go({ ...query, offset: 0 });
        }}
      />
      {events.isPending ? (
        <Loading what="the audit trail" />
      ) : events.isError ? (
        <ErrorMessage error={events.error} />
      ) : events.data.items.length === 0 ? (
        <Empty>
          {query.offset > 0
            ? "No events on this page."
            : Object.keys(apiQuery).length > 0
              ? "No event matches these filters."
              : "Nothing recorded yet."}
        </Empty>
      ) : (
        <table className={events.isPlaceholderData ? "table stale" : "table"} aria-label="Audit trail">
          <thead>
            <tr>
              <th>Time</th>
              <th>Who</th>
              <th>Action</th>
              <th>What</th>
              <th>Project</th>
            </tr>
          </thead>
          <tbody>
            {events.data.items.map((e) => {
              const target = auditTarget(e);
              return (
                <tr key={e.id} data-action={e.action}>
                  <td title={e.created_at}>{formatTime(e.created_at)}</td>
                  <td>{e.actor_name}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td>{target.route ? <a href={href(target.route)}>{target.text}</a> : target.text}</td>
                  <td>
                    {e.project_id && e.project_name ? (
                      <a href={href({ page: "project", projectId: e.project_id })}>{e.project_name}</a>
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {events.data && (
        <Pager
          offset={query.offset}
          limit={AUDIT_PAGE}
          total={events.data.total}
          label="Audit trail pages"
          onChange={(offset) => {
            go({ ...query, offset });
          }}
        />
      )}
    </section>
  );
}
