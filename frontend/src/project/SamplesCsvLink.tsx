// A download link for the whole per-sample table of a fidelity job's output as CSV (every sample, not only
// the page shown). A plain link: the browser sends the session cookie and saves the file.
import type { paths } from "../client/schema";

const SAMPLES_CSV = "/api/v1/jobs/{job_id}/fidelity/samples.csv" satisfies keyof paths;

export const samplesCsvHref = (jobId: string, output: string): string =>
  `${SAMPLES_CSV.replace("{job_id}", encodeURIComponent(jobId))}?${new URLSearchParams({ output }).toString()}`;

export function SamplesCsvLink({ jobId, output }: { jobId: string; output: string }) {
  return (
    <a className="button small-text" href={samplesCsvHref(jobId, output)} download title="Every sample of this output">
      CSV of all samples
    </a>
  );
}
