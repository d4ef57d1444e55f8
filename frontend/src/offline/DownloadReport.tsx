// "Download report (HTML)": the job's page as one file to mail or archive (GET /jobs/{id}/export.html; the
// session cookie authorises the plain link). Not shown inside such a file.
import { isOffline } from "./mode";

export function DownloadReportButton({ jobId }: { jobId: string }) {
  if (isOffline()) return null;
  return (
    <a
      className="button"
      href={`/api/v1/jobs/${encodeURIComponent(jobId)}/export.html`}
      download
      title="One HTML file with every number and chart of this page; opens in a browser without a network"
    >
      Download report (HTML)
    </a>
  );
}
