// What the compare page's sensitivity and sweep sections share: a panel with a heading and what it shows, the
// project's succeeded jobs of one kind to tick (loading, failed, none yet), and the comparison of those ticked.
import type { ReactNode } from "react";
import type { Job } from "../api/types";
import { formatTime } from "../lib/format";
import { Empty, ErrorMessage, Loading } from "./QueryView";

/** The jobs that can be ticked: one per line, its model, dataset, size and time, and a link to its page. */
export function JobPicker({
  legend,
  jobs,
  selected,
  onChange,
  name,
  max,
  open,
  colors,
}: {
  legend: string;
  jobs: Job[];
  selected: string[];
  onChange: (jobs: string[]) => void;
  name: (id: unknown) => string;
  /** At most this many can be ticked. */
  max: number;
  /** A job's page and how its link is read out ("Open the sweep 1a2b3c"). */
  open: (job: Job) => { href: string; label: string };
  /** A ticked job's colour on the chart, as a swatch beside it. */
  colors?: ReadonlyMap<string, string>;
}) {
  return (
    <fieldset className="fields scan-picker">
      <legend>{legend}</legend>
      <ul className="plain">
        {jobs.map((job) => {
          const checked = selected.includes(job.id);
          const configs = Array.isArray(job.params.configs) ? job.params.configs.length : 0;
          const link = open(job);
          return (
            <li key={job.id}>
              <label className="inline">
                <input
                  type="checkbox"
                  checked={checked}
                  disabled={!checked && selected.length >= max}
                  onChange={() => {
                    onChange(checked ? selected.filter((id) => id !== job.id) : [...selected, job.id]);
                  }}
                />
                {checked && colors && (
                  <span className="swatch" style={{ background: colors.get(job.id) }} aria-hidden />
                )}
                <span>
                  <strong>{name(job.params.model_id)}</strong>{" "}
                  <span className="muted small-text">
                    on {name(job.params.dataset_id)} · {configs} configurations · {formatTime(job.finished_at)} ·{" "}
                    <code>{job.id.slice(0, 6)}</code>
                  </span>
                </span>
              </label>{" "}
              <a className="small-text" href={link.href} aria-label={link.label}>
                open
              </a>
            </li>
          );
        })}
      </ul>
    </fieldset>
  );
}

/**
 * The section: `intro` under the heading, then the jobs' loading or error, `none` when the project has no
 * such job, else `picker` and, once one is ticked, `children()` (the comparison).
 */
export function CompareSection({
  className,
  headingId,
  title,
  intro,
  jobs,
  what,
  none,
  available,
  picker,
  selected,
  tickOne,
  children,
}: {
  className: string;
  headingId: string;
  title: string;
  intro: ReactNode;
  /** The query for the jobs that can be ticked. */
  jobs: { isPending: boolean; isError: boolean; error: unknown };
  /** What is loading ("sweeps"). */
  what: string;
  /** Said when there is nothing to compare. */
  none: string;
  /** How many jobs can be ticked. */
  available: number;
  picker: ReactNode;
  /** How many are ticked. */
  selected: number;
  /** Said when none is ticked. */
  tickOne: string;
  children: () => ReactNode;
}) {
  return (
    <section className={`panel ${className}`} aria-labelledby={headingId}>
      <h2 id={headingId}>{title}</h2>
      <p className="muted small-text">{intro}</p>
      {jobs.isPending ? (
        <Loading what={what} />
      ) : jobs.isError ? (
        <ErrorMessage error={jobs.error} />
      ) : available === 0 && selected === 0 ? (
        <Empty>{none}</Empty>
      ) : (
        <>
          {picker}
          {selected === 0 ? <Empty>{tickOne}</Empty> : children()}
        </>
      )}
    </section>
  );
}
