// The out-of-distribution dataset of a robustness job (seed 003): both models on a second dataset the user
// named, compared like a robustness slice (divergence, brittleness ratio against the clean data, agreement,
// accuracies) beside the clean figures, and its worst samples (rows of that dataset, not of the job's): click
// one to see that row's picture with both models' classes (OodSample.tsx).
import { useState } from "react";
import { formatNumber, formatPercent } from "../lib/format";
import { OodSample } from "./OodSample";
import type { FidelityRobustness } from "./robustness";
import { WorstSamplesTable } from "./WorstSamplesTable";
import { pickedAmong } from "./worstSamples";

type Ood = NonNullable<FidelityRobustness["ood"]>;

export function OutOfDistribution({ doc, ood }: { doc: FidelityRobustness; ood: Ood }) {
  const name = ood.dataset_name ?? ood.dataset_id;
  const [picked, setPicked] = useState<number | null>(null);
  const sample = pickedAmong(ood.worst_samples, picked);
  if (ood.error) {
    return (
      <div className="panel" aria-label="Out-of-distribution data">
        <h3>Out-of-distribution data: {name}</h3>
        <p className="warning">{ood.error}</p>
      </div>
    );
  }
  const kl = doc.divergence === "kl";
  const rows: { label: string; clean: string; ood: string }[] = [
    { label: "Samples", clean: String(doc.clean.n_samples), ood: String(ood.n_samples) },
    {
      label: kl ? "Mean KL (nats)" : "Mean MSE",
      clean: formatNumber(kl ? doc.clean.kl_mean_nats : doc.clean.mse_mean),
      ood: formatNumber(kl ? ood.kl_mean_nats : ood.mse_mean),
    },
    { label: "Cosine", clean: formatNumber(doc.clean.cosine_mean, 4), ood: formatNumber(ood.cosine_mean, 4) },
    {
      label: "Top-1 agreement",
      clean: formatPercent(doc.clean.top1_agreement, 1),
      ood: formatPercent(ood.top1_agreement, 1),
    },
    {
      label: "Golden accuracy",
      clean: formatPercent(doc.clean.golden_accuracy, 1),
      ood: formatPercent(ood.golden_accuracy, 1),
    },
    {
      label: "Compressed accuracy",
      clean: formatPercent(doc.clean.compressed_accuracy, 1),
      ood: formatPercent(ood.compressed_accuracy, 1),
    },
  ];
  return (
    <div className="panel" aria-label="Out-of-distribution data">
      <h3>Out-of-distribution data: {name}</h3>
      <p className="muted">
        Both models on the dataset <strong>{name}</strong>, unchanged. Brittleness ratio:{" "}
        <strong>{ood.brittleness_ratio === null ? "—" : `${formatNumber(ood.brittleness_ratio, 3)}×`}</strong> the clean
        divergence.
        {ood.warnings.length > 0 && ` ${ood.warnings.join(" ")}`}
      </p>
      <div className="two-col">
        <table className="compact" aria-label="Out-of-distribution metrics">
          <thead>
            <tr>
              <th>Metric</th>
              <th>Clean</th>
              <th>Out of distribution</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.label}>
                <th scope="row">{r.label}</th>
                <td>{r.clean}</td>
                <td>{r.ood}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <WorstSamplesTable
          rows={ood.worst_samples}
          divergence={doc.divergence}
          label="Worst out-of-distribution samples"
          indexHeader={`Row of ${name}`}
          picked={sample?.sample_index ?? null}
          onPick={(w) => {
            setPicked(w.sample_index);
          }}
        />
      </div>
      {sample && <OodSample datasetId={ood.dataset_id} datasetName={name} sample={sample} />}
    </div>
  );
}
