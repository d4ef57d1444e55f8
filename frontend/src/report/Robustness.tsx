// Robustness slices (seed 003): both models on seeded, corrupted copies of the dataset (noise, photometric
// and geometric corruptions, JPEG, token replacement) and on adversarial inputs crafted against the golden
// model (FGSM, PGD). Curves of the divergence and of both accuracies against severity per slice (golden
// dashed, compressed solid, side by side), the brittleness ratio and mean cosine per slice and severity
// (strengths with their units), and each slice's worst samples (click one to see its corrupted input beside
// the clean one, CorruptedSample.tsx, and to highlight it in the samples table); then the out-of-distribution dataset when the job names one (OutOfDistribution.tsx).
import type { Data, Layout } from "plotly.js";
import { useMemo, useState } from "react";
import { ApiError } from "../api/http";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber, formatPercent } from "../lib/format";
import { CorruptedSample } from "./CorruptedSample";
import { OutOfDistribution } from "./OutOfDistribution";
import {
  divergenceLabel,
  mostBrittle,
  ROBUSTNESS_CSV_HEADER,
  robustnessCsvRows,
  severityCurves,
  sliceLabel,
  sliceValue,
  type FidelityRobustness,
} from "./robustness";
import { useFidelityRobustness } from "./robustnessQueries";
import { WorstSamplesTable } from "./WorstSamplesTable";
import { defaultPointKey, pickedIn, pointKey, pointOf } from "./worstSamples";

const COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"];
const SEVERITY_AXIS = { tickvals: [0, 1, 2, 3], ticktext: ["clean", "mild", "moderate", "severe"] };

function Charts({ doc }: { doc: FidelityRobustness }) {
  const divergence = useMemo<Data[]>(
    () =>
      severityCurves(doc, doc.divergence === "kl" ? "kl_mean_nats" : "mse_mean").map((c, i) => ({
        type: "scatter",
        mode: "lines+markers",
        name: sliceLabel(c.slice),
        x: c.x,
        y: c.y,
        line: { color: COLORS[i % COLORS.length] },
      })),
    [doc],
  );
  const accuracy = useMemo<Data[]>(() => {
    const golden = severityCurves(doc, "golden_accuracy");
    const compressed = severityCurves(doc, "compressed_accuracy");
    return golden.flatMap((g, i) => [
      {
        type: "scatter" as const,
        mode: "lines+markers" as const,
        name: `${sliceLabel(g.slice)} golden`,
        legendgroup: g.slice,
        x: g.x,
        y: g.y,
        line: { color: COLORS[i % COLORS.length], dash: "dash" as const },
      },
      {
        type: "scatter" as const,
        mode: "lines+markers" as const,
        name: `${sliceLabel(g.slice)} compressed`,
        legendgroup: g.slice,
        x: compressed[i]?.x ?? [],
        y: compressed[i]?.y ?? [],
        line: { color: COLORS[i % COLORS.length] },
      },
    ]);
  }, [doc]);
  const hasAccuracy = doc.clean.golden_accuracy !== null;
  const layout = (title: string): Partial<Layout> => ({
    xaxis: { title: { text: "severity" }, ...SEVERITY_AXIS },
    yaxis: { title: { text: title } },
    margin: { l: 60, r: 20, t: 10, b: 50 },
  });
  const csv = () => ({ header: ROBUSTNESS_CSV_HEADER, rows: robustnessCsvRows(doc) });
  return (
    <div className="two-col">
      <ChartPanel
        title={`Divergence vs severity`}
        caption={`${divergenceLabel(doc)} between the two models.`}
        csv={csv}
      >
        <Plot data={divergence} layout={layout(divergenceLabel(doc))} filename="robustness-divergence" />
      </ChartPanel>
      {hasAccuracy ? (
        <ChartPanel title="Accuracy vs severity" caption="Golden dashed, compressed solid." csv={csv}>
          <Plot data={accuracy} layout={layout("top-1 accuracy")} filename="robustness-accuracy" />
        </ChartPanel>
      ) : (
        <p className="muted">No accuracy curves: the dataset has no labels.</p>
      )}
    </div>
  );
}

function RatioTable({ doc }: { doc: FidelityRobustness }) {
  return (
    <table className="compact" aria-label="Brittleness ratio per slice">
      <thead>
        <tr>
          <th>Slice</th>
          <th>Severity (strength)</th>
          <th>{divergenceLabel(doc)}</th>
          <th>Brittleness ratio</th>
          <th>Cosine</th>
          <th>Top-1 agreement</th>
          <th>Golden accuracy</th>
          <th>Compressed accuracy</th>
        </tr>
      </thead>
      <tbody>
        {doc.slices.flatMap((s) =>
          s.points.map((p) => (
            <tr key={`${s.name}-${p.severity.toString()}`}>
              <th scope="row" title={s.parameter}>
                {sliceLabel(s.name)}
              </th>
              <td>
                {p.severity_name} ({sliceValue(s.name, p.value)})
              </td>
              <td>{formatNumber(doc.divergence === "kl" ? p.kl_mean_nats : p.mse_mean)}</td>
              <td>{p.brittleness_ratio === null ? "—" : `${formatNumber(p.brittleness_ratio, 3)}×`}</td>
              <td>{formatNumber(p.cosine_mean, 4)}</td>
              <td>{formatPercent(p.top1_agreement, 1)}</td>
              <td>{formatPercent(p.golden_accuracy, 1)}</td>
              <td>{formatPercent(p.compressed_accuracy, 1)}</td>
            </tr>
          )),
        )}
      </tbody>
    </table>
  );
}

function WorstSamples({
  doc,
  jobId,
  onSample,
}: {
  doc: FidelityRobustness;
  jobId: string;
  onSample: (index: number) => void;
}) {
  const [key, setKey] = useState(() => defaultPointKey(doc));
  const [picked, setPicked] = useState<number | null>(null);
  const found = pointOf(doc, key);
  const sample = pickedIn(found?.point, picked);
  return (
    <div className="panel">
      <h3>Worst samples</h3>
      <label>
        Slice{" "}
        <select
          value={key}
          onChange={(e) => {
            setKey(e.target.value);
          }}
        >
          {doc.slices.flatMap((s) =>
            s.points.map((p) => (
              <option key={pointKey(s.name, p.severity)} value={pointKey(s.name, p.severity)}>
                {sliceLabel(s.name)} — {p.severity_name} ({sliceValue(s.name, p.value)})
              </option>
            )),
          )}
        </select>
      </label>
      <WorstSamplesTable
        rows={found?.point.worst_samples ?? []}
        divergence={doc.divergence}
        label="Worst samples of the slice"
        picked={sample?.sample_index ?? null}
        onPick={(w) => {
          setPicked(w.sample_index);
          onSample(w.sample_index);
        }}
      />
      {found && sample && (
        <CorruptedSample
          jobId={jobId}
          slice={found.slice}
          severity={found.point.severity}
          severityName={found.point.severity_name}
          sample={sample}
        />
      )}
    </div>
  );
}

/** The robustness section of the report; nothing when the job ran without robustness slices. */
export function Robustness({ jobId, onSample }: { jobId: string; onSample: (index: number) => void }) {
  const robustness = useFidelityRobustness(jobId);
  if (robustness.isError && robustness.error instanceof ApiError && robustness.error.status === 404) return null;
  const doc = robustness.data;
  const brittle = doc ? mostBrittle(doc) : null;
  const adversarial = doc?.slices.some((s) => s.target === "gradient") ?? false;
  return (
    <section aria-labelledby="robustness-heading">
      <h2 id="robustness-heading">Robustness slices</h2>
      {robustness.isPending ? (
        <Loading what="the robustness slices" />
      ) : robustness.isError ? (
        <ErrorMessage error={robustness.error} />
      ) : doc?.error ? (
        <p className="muted">{doc.error}</p>
      ) : doc ? (
        <>
          <p className="muted">
            {doc.n_samples} samples of output <code>{doc.primary_output}</code>
            {doc.slices.length > 0 ? `, corrupted with seed ${doc.seed.toString()}.` : "."}
            Brittleness ratio: the divergence on the slice over the divergence on clean data
            {brittle ? `; highest: ${sliceLabel(brittle.slice)} at ${formatNumber(brittle.ratio, 3)}×` : ""}.
            {adversarial &&
              " FGSM and PGD inputs are crafted against the golden model (its own prediction as the target), so its accuracy falls by design; the divergence says how closely the compressed model follows it there."}
            {doc.skipped.length > 0 &&
              ` Skipped: ${doc.skipped.map((s) => `${sliceLabel(s.name)} (${s.reason})`).join("; ")}.`}
          </p>
          {doc.slices.length > 0 && (
            <>
              <Charts doc={doc} />
              <RatioTable doc={doc} />
              <WorstSamples doc={doc} jobId={jobId} onSample={onSample} />
            </>
          )}
          {doc.ood && <OutOfDistribution doc={doc} ood={doc.ood} />}
        </>
      ) : null}
    </section>
  );
}
