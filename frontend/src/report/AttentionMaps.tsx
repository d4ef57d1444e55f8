// Attention-map fidelity of an ONNX pair (issue 13, transformer internals): a head × layer heatmap of the
// mean KL (or, toggled, Jensen–Shannon) between the golden and compressed attention distributions, the
// number written in each cell.
import type { Data, Layout } from "plotly.js";
import { useMemo, useState } from "react";
import { ApiError } from "../api/http";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber } from "../lib/format";
import {
  ATTENTION_CSV_HEADER,
  attentionCsvRows,
  attentionHeatmap,
  worstHead,
  type AttentionMetric,
  type FidelityAttention,
} from "./attention";
import { useFidelityAttention } from "./attentionQueries";

const METRICS: { value: AttentionMetric; label: string }[] = [
  { value: "kl", label: "KL(golden ‖ compressed)" },
  { value: "js", label: "Jensen–Shannon" },
];

function Heatmap({ doc, metric }: { doc: FidelityAttention; metric: AttentionMetric }) {
  const view = useMemo(() => attentionHeatmap(doc, metric), [doc, metric]);
  const data = useMemo<Data[]>(
    () => [
      {
        type: "heatmap",
        x: view.heads,
        y: view.layers,
        z: view.z,
        text: view.text as unknown as string[],
        texttemplate: "%{text}",
        hovertemplate: `%{y}, %{x}: ${metric.toUpperCase()} %{text} nats<extra></extra>`,
        colorscale: "Reds",
        zmin: 0,
        zmax: view.zmax > 0 ? view.zmax : 1,
        colorbar: { title: { text: "nats" } },
      },
    ],
    [view, metric],
  );
  const layout = useMemo<Partial<Layout>>(
    () => ({
      xaxis: { title: { text: "head" }, type: "category" },
      yaxis: { title: { text: "" }, type: "category", autorange: "reversed", automargin: true },
      margin: { l: 160, r: 20, t: 10, b: 50 },
    }),
    [],
  );
  return (
    <Plot
      data={data}
      layout={layout}
      filename={`attention-${metric}`}
      height={Math.max(220, 40 * view.layers.length + 80)}
    />
  );
}

/** The attention-map section of the report; nothing when the job has none. */
export function AttentionMaps({ jobId }: { jobId: string }) {
  const attention = useFidelityAttention(jobId);
  const [metric, setMetric] = useState<AttentionMetric>("kl");
  if (attention.isError && attention.error instanceof ApiError && attention.error.status === 404) return null;
  const doc = attention.data;
  const worst = doc ? worstHead(doc, metric) : null;
  return (
    <section aria-labelledby="attention-heading">
      <h2 id="attention-heading">Attention maps</h2>
      {attention.isPending ? (
        <Loading what="the attention maps" />
      ) : attention.isError ? (
        <ErrorMessage error={attention.error} />
      ) : doc?.error ? (
        <p className="muted">No attention maps: {doc.error}</p>
      ) : doc ? (
        <ChartPanel
          title="Attention divergence per layer and head"
          caption={
            <>
              Mean over the {doc.n_queries} query positions of {doc.n_samples} samples
              {doc.mask_input ? ` (padded ones left out by ${doc.mask_input})` : " (no attention mask: every position)"}
              {worst &&
                `; the most changed head is L${worst.layer.toString()} head ${worst.head.toString()} (${formatNumber(worst.value)} nats)`}
              .{doc.notes.map((note) => ` ${note}`)}
            </>
          }
          csv={() => ({ header: ATTENTION_CSV_HEADER, rows: attentionCsvRows(doc) })}
        >
          <div className="segmented" role="radiogroup" aria-label="Attention metric">
            {METRICS.map((m) => (
              <label key={m.value} className={m.value === metric ? "checked" : undefined}>
                <input
                  type="radio"
                  name="attention-metric"
                  value={m.value}
                  checked={m.value === metric}
                  onChange={() => {
                    setMetric(m.value);
                  }}
                />
                {m.label}
              </label>
            ))}
          </div>
          <Heatmap doc={doc} metric={metric} />
        </ChartPanel>
      ) : null}
    </section>
  );
}
