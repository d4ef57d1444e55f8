import { formatEta } from "../lib/eta";
import { formatPercent } from "../lib/format";

const TONE: Record<string, string> = {
  ready: "good",
  succeeded: "good",
  inspecting: "busy",
  queued: "busy",
  running: "busy",
  invalid: "bad",
  failed: "bad",
  cancelled: "muted",
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${TONE[status] ?? "muted"}`}>{status}</span>;
}

/** A bar with its percentage and, for a job, the API's time-left estimate (eta_s) beside it once there is one. */
export function ProgressBar({ value, label, etaS }: { value: number; label: string; etaS?: number | null }) {
  const eta = formatEta(etaS);
  return (
    <div className="progress">
      <progress max={1} value={value} aria-label={label} />
      <span className="progress-text">{formatPercent(value, 0)}</span>
      {eta && <span className="progress-eta muted small-text">{eta}</span>}
    </div>
  );
}
