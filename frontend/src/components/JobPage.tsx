// What the report, sensitivity and sweep pages show alike: the job's status among its facts, and before the
// results, a job of another kind or a job that has not succeeded (still moving: its progress; else why not).
import { useJob } from "../api/jobs";
import { isActive } from "../api/polling";
import { useProject } from "../api/projects";
import type { Job } from "../api/types";
import { formatDuration, formatTime } from "../lib/format";
import { jobPageHref } from "../lib/jobPages";
import { Fact } from "./Fact";
import { JobTimesFacts } from "./JobTimes";
import { ProgressBar, StatusBadge } from "./Status";

/** A job page's job, whether it is a succeeded job of `kind` (its results can be read), and its project. */
export function useJobOfKind(jobId: string, kind: string) {
  const job = useJob(jobId);
  const succeeded = job.data?.status === "succeeded" && job.data.kind === kind;
  const projectId = job.data?.project_id ?? "";
  const project = useProject(projectId);
  return { jobId, kind, job, succeeded, projectId, projectName: project.data?.name };
}

export type JobOfKind = ReturnType<typeof useJobOfKind>;

/** "Job … is a sweep job, not a sensitivity scan." with a link to the page it has. */
export function OtherKind({ job, expected }: { job: Job; expected: string }) {
  const page = jobPageHref(job.id, job.kind);
  return (
    <p className="error">
      Job {job.id} is a {job.kind} job, not {expected}. {page && <a href={page}>Its page</a>}
    </p>
  );
}

/**
 * A job that has not succeeded: while queued or running, its progress and when `results` appear; once failed
 * or cancelled, that there are none and the job's error.
 */
export function JobNotDone({ job, noun, results }: { job: Job; noun: string; results: string }) {
  if (isActive(job)) {
    return (
      <div className="panel" role="status">
        <p>
          This {noun} is {job.status}; {results}.
        </p>
        <ProgressBar value={job.progress} label="Job progress" etaS={job.eta_s} />{" "}
        <span className="muted">{job.progress_message}</span>
      </div>
    );
  }
  return (
    <div className="panel">
      <p>
        This {noun} {job.status === "cancelled" ? "was cancelled" : "failed"}: there are no results.
      </p>
      {job.error && (
        <p className="error" role="alert">
          {job.error}
        </p>
      )}
    </div>
  );
}

/** The last facts of a job's page: its status, when it started (still moving) or finished, and its times. */
export function JobStatusFacts({ job }: { job: Job }) {
  return (
    <>
      <Fact label="Status">
        <StatusBadge status={job.status} />
      </Fact>
      <Fact label={isActive(job) ? "Started" : "Finished"}>
        {isActive(job)
          ? formatTime(job.started_at)
          : `${formatTime(job.finished_at)} (${formatDuration(job.duration_s)})`}
      </Fact>
      <JobTimesFacts job={job} />
    </>
  );
}
