import { useState } from "react";
import { JOBS_PAGE, useCancelJob } from "../api/jobs";
import { POLL_MS, isActive } from "../api/polling";
import type { Job } from "../api/types";
import { Pager } from "../components/Pager";
import { Empty, ErrorMessage, QueryView } from "../components/QueryView";
import { ConfirmButton } from "../components/ConfirmDialog";
import { JobTimesText } from "../components/JobTimes";
import { ProgressBar, StatusBadge } from "../components/Status";
import { TableHead } from "../components/TableHead";
import { formatTime } from "../lib/format";
import { isObject } from "../lib/json";
import { DEFAULT_SAMPLE_QUERY, DEFAULT_SENSITIVITY_QUERY, DEFAULT_SWEEP_QUERY, href } from "../lib/route";
import { JobFiltersForm } from "./JobFilters";
import { ManageButtons, NotesText, TagList } from "./ManageActions";
import { NO_FILTERS, hasFilters, useFilteredJobs, useRelaunchJob, type JobFilters } from "./manageQueries";
import { useNames } from "./names";
import { recoveryMethods, recoverySource } from "../recovery/recoveryJob";

const RELAUNCHABLE = new Set(["fidelity", "sensitivity", "sweep", "recovery"]);

/** How a job is named in buttons and dialogs: its name, else its kind and short id. */
export function jobLabel(job: Job): string {
  return job.name ? `job “${job.name}”` : `${job.kind} job ${job.id.slice(0, 8)}`;
}

export function JobSubject({ job, name }: { job: Job; name: (id: unknown) => string }) {
  if (job.kind === "fidelity") {
    return (
      <>
        {name(job.params.golden_model_id)} <span className="muted">vs</span> {name(job.params.compressed_model_id)}{" "}
        <span className="muted">on</span> {name(job.params.dataset_id)}
      </>
    );
  }
  if (job.kind === "sensitivity") {
    const configs = Array.isArray(job.params.configs) ? job.params.configs.length : null;
    return (
      <>
        {name(job.params.model_id)} <span className="muted">on</span> {name(job.params.dataset_id)}
        {configs !== null && (
          <span className="muted">
            {" "}
            · {configs} configuration{configs === 1 ? "" : "s"}
            {job.params.all_but === true ? " · all-but" : ""}
          </span>
        )}
        {typeof job.chunks_total === "number" && job.chunks_total > 1 && (
          <span className="muted"> · {job.chunks_total} chunks</span>
        )}
      </>
    );
  }
  if (job.kind === "sweep") {
    const configs = Array.isArray(job.params.configs) ? job.params.configs.length : null;
    const mixed = isObject(job.params.mixed_precision) ? job.params.mixed_precision : null;
    const plans = mixed && Array.isArray(mixed.average_bits) ? mixed.average_bits.length : 0;
    return (
      <>
        {name(job.params.model_id)} <span className="muted">on</span> {name(job.params.dataset_id)}
        {configs !== null && (
          <span className="muted">
            {" "}
            · {configs} configuration{configs === 1 ? "" : "s"}
            {plans > 0 ? ` + ${plans.toString()} mixed-precision plan${plans === 1 ? "" : "s"}` : ""}
            {job.params.latency === false ? "" : " · timed"}
          </span>
        )}
      </>
    );
  }
  if (job.kind === "inspect") return <>{name(job.params.model_id)}</>;
  if (job.kind === "recovery") {
    return (
      <>
        {recoveryMethods(job.params)} <span className="muted">on</span> {name(job.params.golden_model_id)}{" "}
        <span className="muted">
          · {recoverySource(job.params)} · on {name(job.params.dataset_id)}
        </span>
      </>
    );
  }
  return <span className="muted">—</span>;
}

function JobRow({
  job,
  name,
  projectId,
  canCancel,
}: {
  job: Job;
  name: (id: unknown) => string;
  projectId: string;
  canCancel: boolean;
}) {
  const cancel = useCancelJob(projectId);
  const relaunch = useRelaunchJob(projectId);
  const active = isActive(job);
  return (
    <tr data-job-id={job.id} data-status={job.status}>
      <td>{job.kind}</td>
      <td>
        {job.name && <div className="job-name">{job.name}</div>}
        <JobSubject job={job} name={name} />
        <TagList tags={job.tags} />
        <NotesText notes={job.notes} />
        {job.error && <div className="error small-text job-error">{job.error}</div>}
        {cancel.isError && <ErrorMessage error={cancel.error} />}
        {relaunch.isError && <ErrorMessage error={relaunch.error} />}
        {relaunch.isSuccess && (
          <p className="muted small-text" role="status">
            Relaunched as job {relaunch.data.id.slice(0, 8)} (at the top of the list).
          </p>
        )}
      </td>
      <td>
        <StatusBadge status={job.status} />
      </td>
      <td>
        {active ? (
          <>
            <ProgressBar value={job.progress} label={`Progress of ${job.kind} job`} etaS={job.eta_s} />
            <div className="muted small-text">{job.progress_message}</div>
          </>
        ) : null}
        <div className="muted small-text">
          <JobTimesText job={job} />
        </div>
      </td>
      <td>
        {formatTime(job.created_at)}
        <div className="muted small-text launched-by">by {job.created_by_name ?? "a deleted account"}</div>
      </td>
      <td>
        <div className="row-actions">
          {job.kind === "fidelity" && job.status === "succeeded" && (
            <a href={href({ page: "report", jobId: job.id, query: DEFAULT_SAMPLE_QUERY })}>Report</a>
          )}
          {job.kind === "sensitivity" && (
            <a
              href={href({ page: "sensitivity", jobId: job.id, query: DEFAULT_SENSITIVITY_QUERY })}
              aria-label={`Sensitivity of ${name(job.params.model_id)}`}
            >
              Sensitivity
            </a>
          )}
          {job.kind === "sweep" && (
            <a
              href={href({ page: "sweep", jobId: job.id, query: DEFAULT_SWEEP_QUERY })}
              aria-label={`Sweep of ${name(job.params.model_id)}`}
            >
              Sweep
            </a>
          )}
          {job.kind === "recovery" && (
            <a
              href={href({ page: "recovery", jobId: job.id })}
              aria-label={`Recovery of ${name(job.params.golden_model_id)}: its results`}
            >
              Results
            </a>
          )}
          {active && canCancel && (
            <ConfirmButton
              text="Cancel"
              ariaLabel={`Cancel ${jobLabel(job)}`}
              title={`Cancel ${jobLabel(job)}?`}
              confirm="Cancel the job"
              keep="Let it run"
              disabled={cancel.isPending}
              pending={cancel.isPending}
              error={cancel.error}
              onConfirm={(close) => {
                cancel.mutate(job.id, { onSuccess: close });
              }}
            >
              <p>
                {job.status === "running" ? "It stops where it is" : "It leaves the queue"} and keeps no results; it
                cannot be resumed. Relaunch runs it again from the beginning.
              </p>
            </ConfirmButton>
          )}
          {canCancel && RELAUNCHABLE.has(job.kind) && (
            <button
              type="button"
              className="small"
              disabled={relaunch.isPending}
              aria-label={`Relaunch ${jobLabel(job)} with the same parameters`}
              title="A new job with the same parameters"
              onClick={() => {
                relaunch.mutate(job.id);
              }}
            >
              Relaunch
            </button>
          )}
          {canCancel && <ManageButtons what="job" projectId={projectId} item={job} label={jobLabel(job)} />}
        </div>
      </td>
    </tr>
  );
}

export function JobsSection({ projectId, canCancel }: { projectId: string; canCancel: boolean }) {
  const [offset, setOffset] = useState(0);
  const [filters, setFilters] = useState<JobFilters>(NO_FILTERS);
  const jobs = useFilteredJobs(projectId, filters, offset);
  const name = useNames(projectId);
  const filtered = hasFilters(filters);
  return (
    <section aria-labelledby="jobs-heading">
      <h2 id="jobs-heading">
        Jobs{" "}
        {jobs.data?.items.some(isActive) && (
          <span className="muted small-text">(updating every {POLL_MS / 1000} s)</span>
        )}
      </h2>
      <JobFiltersForm
        filters={filters}
        onChange={(next) => {
          setFilters(next);
          setOffset(0);
        }}
      />
      <QueryView query={jobs} what="jobs">
        {(page) =>
          page.total === 0 ? (
            <Empty>
              {filtered
                ? "No job matches these filters."
                : "No jobs yet. Uploading a model starts its inspection; launch a fidelity, sensitivity, sweep or recovery job above."}
            </Empty>
          ) : (
            <>
              <table className="table jobs" aria-labelledby="jobs-heading">
                <TableHead columns={["Kind", "What", "Status", "Progress / time", "Launched"]} actions />
                <tbody>
                  {page.items.map((job) => (
                    <JobRow key={job.id} job={job} name={name} projectId={projectId} canCancel={canCancel} />
                  ))}
                </tbody>
              </table>
              <Pager offset={offset} limit={JOBS_PAGE} total={page.total} onChange={setOffset} label="Jobs pages" />
            </>
          )
        }
      </QueryView>
    </section>
  );
}
