// A team's audit trail (team admins): filtered on the server by action (kept in the URL), person, project and
// days, each event with its project, and the same selection as a CSV download. Days are typed and read as the
// rest of the dashboard writes them (2026-12-07, the viewer's local time, as formatTime shows the events), not
// in a date input's locale format (mm/dd/yyyy in en-US; issue 35).
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
import { formatTime, parseDay } from "../lib/format";
import { href, type AuditQuery } from "../lib/route";
import "./manage.css";

const ACTIONS = [...AUDIT_ACTIONS, "model.updated", "dataset.updated", "job.updated"];
const AUDIT_CSV = "/api/v1/teams/{team_id}/audit.csv" satisfies keyof paths;

/** Filters besides the action: a username, a project id and a range of whole local days, "" when unset. */
export interface AuditFilters {
  actor: string;
  projectId: string;
  from: string; // YYYY-MM-DD, first day included
  to: string; // YYYY-MM-DD, last day included
}

export const NO_AUDIT_FILTERS: AuditFilters = { actor: "", projectId: "", from: "", to: "" };

/** The instant a local day starts (`later` days on), as the API reads times: ISO 8601 in UTC. */
function dayStart(day: string, later = 0): string {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(year ?? 0, (month ?? 1) - 1, (date ?? 1) + later).toISOString();
}

/** The API query of the filters (days become since/until: the last day's end is the next day's start). */
export function auditQuery(action: string | null, filters: AuditFilters): Record<string, string> {
  const query: Record<string, string> = {};
  if (action) query.action = action;
  if (filters.actor.trim()) query.actor = filters.actor.trim();
  if (filters.projectId) query.project_id = filters.projectId;
  if (filters.from) query.since = dayStart(filters.from);
  if (filters.to) query.until = dayStart(filters.to, 1);
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

/** A day in the dashboard's one date format, typed (ISO year-month-day: the same in every locale). */
function DayField({ label, value, onChange }: { label: string; value: string; onChange: (day: string) => void }) {
  return (
    <label>
      {label}
      <input
        className="day-input"
        value={value}
        placeholder="2026-12-07"
        inputMode="numeric"
        maxLength={10}
        spellCheck={false}
        aria-invalid={parseDay(value) === null}
        onChange={(e) => {
          onChange(e.target.value);
        }}
      />
    </label>
  );
}

function Filters({ teamId, onApply }: { teamId: string; onApply: (f: AuditFilters) => void }) {
  const projects = useProjects();
  const [draft, setDraft] = useState<AuditFilters>(NO_AUDIT_FILTERS);
  const set = (change: Partial<AuditFilters>) => {
    setDraft({ ...draft, ...change });
  };
  const from = parseDay(draft.from);
  const to = parseDay(draft.to);
  const problem =
    from === null || to === null
      ? "Write days as 2026-12-07 (year-month-day)."
      : from && to && to < from
        ? "The last day is before the first."
        : null;
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (problem === null) onApply({ ...draft, from: from ?? "", to: to ?? "" });
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
      <DayField
        label="From"
        value={draft.from}
        onChange={(from) => {
          set({ from });
        }}
      />
      <DayField
        label="To"
        value={draft.to}
        onChange={(to) => {
          set({ to });
        }}
      />
      <button type="submit" className="small" disabled={problem !== null}>
        Filter
      </button>
      {problem && (
        <p className="error small-text" role="alert">
          {problem}
        </p>
      )}
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
        Who uploaded, launched, cancelled, deleted and changed what (models, datasets, jobs, budgets, alerts, members),
        in which project, newest first, in your local time.{" "}
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
