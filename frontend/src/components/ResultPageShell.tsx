// The frame of a job's result page (fidelity report, sensitivity scan, sweep, recovery): the title and crumbs, the
// download and compare buttons, the job's facts, then its results; or, before them, the job loading, a job of
// another kind, or one that has not succeeded.
import type { ReactNode } from "react";
import type { Job } from "../api/types";
import { jobCrumbs } from "../lib/jobPages";
import { DownloadReportButton } from "../offline/DownloadReport";
import { JobNotDone, OtherKind, type JobOfKind } from "./JobPage";
import { Layout } from "./Layout";
import { ErrorMessage, Loading } from "./QueryView";

export function ResultPageShell({
  page,
  crumb,
  title,
  compare,
  facts,
  expected,
  noun,
  results,
  children,
  after,
  downloadable = true,
}: {
  /** The job, from useJobOfKind. */
  page: JobOfKind;
  /** The page's last crumb. */
  crumb: string;
  title: string;
  /** The button to the project's compare page, there once the project is known. */
  compare: { label: string; href: (projectId: string) => string };
  facts: (job: Job) => ReactNode;
  /** For a job of another kind: "… not a sweep". */
  expected: string;
  /** For a job that has not succeeded: "This scan is running; the heatmap appears when it succeeds." */
  noun: string;
  results: string;
  /** The results of a succeeded job of the page's kind. */
  children: (job: Job) => ReactNode;
  /** Under the results, for any job of the page's kind (e.g. its chunks, live while it runs). */
  after?: (job: Job) => ReactNode;
  /** Whether the job's page can be downloaded as one HTML file (GET /jobs/{id}/export.html serves its kind). */
  downloadable?: boolean;
}) {
  const { jobId, kind, job, succeeded, projectId, projectName } = page;
  return (
    <Layout
      crumbs={jobCrumbs(projectId, projectName, crumb)}
      title={title}
      actions={
        <div className="actions" style={{ marginTop: 0 }}>
          {succeeded && downloadable && <DownloadReportButton jobId={jobId} />}
          {projectId && (
            <a className="button" href={compare.href(projectId)}>
              {compare.label}
            </a>
          )}
        </div>
      }
    >
      {job.isPending && <Loading what="the job" />}
      {job.isError && <ErrorMessage error={job.error} />}
      {job.data && (
        <>
          {facts(job.data)}
          {job.data.kind !== kind ? (
            <OtherKind job={job.data} expected={expected} />
          ) : !succeeded ? (
            <JobNotDone job={job.data} noun={noun} results={results} />
          ) : (
            children(job.data)
          )}
          {job.data.kind === kind && after?.(job.data)}
        </>
      )}
    </Layout>
  );
}
