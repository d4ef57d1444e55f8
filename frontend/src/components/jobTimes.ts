// How long a job waited for a worker and how long it has run: an upload that takes 35 s to be ready behind
// another job while its task says 1.8 s is a queue wait, and the pages say so.

export interface JobTimestamps {
  status: string;
  created_at: string;
  started_at?: string | null;
  finished_at?: string | null;
}

export interface JobTimes {
  /** Seconds from created to started (to now while it still waits); null when it never started. */
  queueWait: number | null;
  /** Seconds from started to finished (to now while it runs); null when it never started. */
  runTime: number | null;
  waiting: boolean;
  running: boolean;
}

const seconds = (from: string, to: number): number => Math.max(0, (to - new Date(from).getTime()) / 1000);

export function jobTimes(job: JobTimestamps, now: number = Date.now()): JobTimes {
  const waiting = job.status === "queued" && !job.started_at;
  const running = job.status === "running";
  const end = job.finished_at ? new Date(job.finished_at).getTime() : now;
  const started = job.started_at ? new Date(job.started_at).getTime() : null;
  return {
    queueWait: started !== null ? seconds(job.created_at, started) : waiting ? seconds(job.created_at, now) : null,
    runTime: job.started_at ? seconds(job.started_at, end) : null,
    waiting,
    running,
  };
}
