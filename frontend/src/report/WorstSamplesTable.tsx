// The worst samples of a robustness point or of the out-of-distribution dataset (Robustness.tsx,
// OutOfDistribution.tsx): index, divergence, both models' classes and the label. With onPick, each index
// is a button, the picked one pressed.
import { formatNumber } from "../lib/format";
import type { WorstSample } from "./worstSamples";

export function WorstSamplesTable({
  rows,
  divergence,
  label,
  indexHeader = "Sample",
  picked = null,
  onPick,
}: {
  rows: WorstSample[];
  divergence: "kl" | "mse";
  /** The table's accessible name. */
  label: string;
  indexHeader?: string;
  picked?: number | null;
  onPick?: (sample: WorstSample) => void;
}) {
  return (
    <table className="compact" aria-label={label}>
      <thead>
        <tr>
          <th>{indexHeader}</th>
          <th>{divergence === "kl" ? "KL (nats)" : "MSE"}</th>
          <th>Golden</th>
          <th>Compressed</th>
          <th>Label</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((w) => (
          <tr key={w.sample_index}>
            <td>
              {onPick ? (
                <button
                  type="button"
                  className="link"
                  aria-pressed={picked === w.sample_index}
                  onClick={() => {
                    onPick(w);
                  }}
                >
                  #{w.sample_index}
                </button>
              ) : (
                `#${w.sample_index.toString()}`
              )}
            </td>
            <td>{formatNumber(w.divergence)}</td>
            <td>{w.golden_class ?? "—"}</td>
            <td>{w.compressed_class ?? "—"}</td>
            <td>{w.label ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
