// Filters of the job list, applied by the server: kind and status at once, tag and text on "Filter".
import { useState, type SubmitEvent } from "react";
import { NO_FILTERS, hasFilters, type JobFilters, type JobKindName, type JobStatusName } from "./manageQueries";

const KINDS: JobKindName[] = ["fidelity", "sensitivity", "sweep", "recovery", "inspect"];
const STATUSES: JobStatusName[] = ["queued", "running", "succeeded", "failed", "cancelled"];

export function JobFiltersForm({ filters, onChange }: { filters: JobFilters; onChange: (f: JobFilters) => void }) {
  const [tag, setTag] = useState(filters.tag);
  const [q, setQ] = useState(filters.q);
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    onChange({ ...filters, tag: tag.trim(), q: q.trim() });
  };
  return (
    <form className="job-filters" role="search" aria-label="Filter jobs" onSubmit={submit}>
      <label>
        Kind
        <select
          value={filters.kind}
          onChange={(e) => {
            onChange({ ...filters, kind: e.target.value as JobKindName | "" });
          }}
        >
          <option value="">any</option>
          {KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </label>
      <label>
        Status
        <select
          value={filters.status}
          onChange={(e) => {
            onChange({ ...filters, status: e.target.value as JobStatusName | "" });
          }}
        >
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label>
        Tag
        <input
          value={tag}
          spellCheck={false}
          onChange={(e) => {
            setTag(e.target.value);
          }}
        />
      </label>
      <label>
        Name or notes
        <input
          type="search"
          value={q}
          onChange={(e) => {
            setQ(e.target.value);
          }}
        />
      </label>
      <button type="submit" className="small">
        Filter
      </button>
      {hasFilters(filters) && (
        <button
          type="button"
          className="small"
          onClick={() => {
            setTag("");
            setQ("");
            onChange(NO_FILTERS);
          }}
        >
          Clear
        </button>
      )}
    </form>
  );
}
