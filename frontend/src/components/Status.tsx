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

export function ProgressBar({ value, label }: { value: number; label: string }) {
  return (
    <div className="progress">
      <progress max={1} value={value} aria-label={label} />
      <span className="progress-text">{formatPercent(value, 0)}</span>
    </div>
  );
}
