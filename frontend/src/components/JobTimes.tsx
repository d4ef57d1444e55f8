import { formatDuration } from "../lib/format";
import { jobTimes, type JobTimestamps } from "./jobTimes";

/** "waited 33.0 s · ran 1.8 s" for a job row. */
export function JobTimesText({ job }: { job: JobTimestamps }) {
  const t = jobTimes(job);
  const parts = [
    t.queueWait !== null && `${t.waiting ? "waiting" : "waited"} ${formatDuration(t.queueWait)}`,
    t.runTime !== null && `${t.running ? "running" : "ran"} ${formatDuration(t.runTime)}`,
  ].filter(Boolean);
  return <span className="job-times">{parts.length ? parts.join(" · ") : "—"}</span>;
}

/** Queue wait and run time as two entries of a page header's facts (a <dl>). */
export function JobTimesFacts({ job }: { job: JobTimestamps }) {
  const t = jobTimes(job);
  return (
    <>
      <div>
        <dt>Queue wait</dt>
        <dd>{t.queueWait === null ? "—" : `${formatDuration(t.queueWait)}${t.waiting ? " so far" : ""}`}</dd>
      </div>
      <div>
        <dt>Run time</dt>
        <dd>{t.runTime === null ? "—" : `${formatDuration(t.runTime)}${t.running ? " so far" : ""}`}</dd>
      </div>
    </>
  );
}
