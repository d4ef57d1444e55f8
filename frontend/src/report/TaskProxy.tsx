// "Does divergence predict the task?" (issue 30): per task metric, a scatter of the per-sample proxy (KL, or
// SQNR for a non-classifier) against the sample's task value, Spearman's rho in words, the samples where the
// two disagree most, and the samples worst by the task metric. Clicking a point or a sample opens it as the
// per-sample table does.
import type { Data, Layout, PlotDatum } from "plotly.js";
import { useMemo, useState } from "react";
import { ApiError } from "../api/http";
import { ChartPanel } from "../components/ChartPanel";
import { Pager } from "../components/Pager";
import { Plot } from "../components/Plot";
import { ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber } from "../lib/format";
import {
  defaultMetric,
  disagreementText,
  proxyLabel,
  rhoInWords,
  scatterSeries,
  type TaskMetricProxy,
  type TaskProxy as TaskProxyDoc,
} from "./taskProxy";
import { useTaskProxy, useTaskSamples } from "./taskProxyQueries";

const PAGE = 20;

function Scatter({
  doc,
  metric,
  onSample,
}: {
  doc: TaskProxyDoc;
  metric: TaskMetricProxy;
  onSample: (index: number) => void;
}) {
  const series = useMemo(() => scatterSeries(doc.points, metric.metric), [doc, metric]);
  const data = useMemo<Data[]>(
    () => [
      {
        type: "scatter",
        mode: "markers",
        x: series.x,
        y: series.y,
        customdata: series.index,
        marker: { color: "#4c78a8", size: 7, opacity: 0.75 },
        hovertemplate: `sample #%{customdata}<br>${doc.proxy === "kl" ? "KL" : "SQNR"} %{x:.4g}<br>${metric.metric} %{y:.4g}<extra></extra>`,
      },
    ],
    [series, doc.proxy, metric.metric],
  );
  const layout = useMemo<Partial<Layout>>(
    () => ({
      xaxis: { title: { text: proxyLabel(doc.proxy) } },
      yaxis: {
        title: { text: `${metric.metric} (${metric.higher_is_better ? "higher is better" : "lower is better"})` },
      },
      margin: { l: 70, r: 20, t: 10, b: 50 },
    }),
    [doc.proxy, metric],
  );
  const click = (point: PlotDatum) => {
    onSample(Number(point.customdata));
  };
  const thinned = doc.stride > 1 ? ` Every ${doc.stride.toString()}th sample by index is drawn.` : "";
  const unplotted =
    series.unplotted > 0
      ? ` ${series.unplotted.toLocaleString("en-US")} samples are not drawn (no task value, or identical outputs: SQNR +∞).`
      : "";
  return (
    <ChartPanel
      title={`Divergence against ${metric.metric}`}
      caption={`One point per sample; click one to open it.${thinned}${unplotted}`}
      csv={() => ({
        header: ["sample_index", doc.proxy, metric.metric],
        rows: series.index.map((index, i) => [index, series.x[i] ?? null, series.y[i] ?? null]),
      })}
    >
      <Plot data={data} layout={layout} filename={`task-proxy-${metric.metric}`} onClick={click} />
    </ChartPanel>
  );
}

function Disagreements({
  metric,
  proxy,
  onSample,
}: {
  metric: TaskMetricProxy;
  proxy: TaskProxyDoc["proxy"];
  onSample: (index: number) => void;
}) {
  if (metric.disagreements.length === 0) return null;
  return (
    <div className="panel">
      <h3>Where they disagree most</h3>
      <table className="compact" aria-label="Samples where divergence and task disagree most">
        <thead>
          <tr>
            <th>Sample</th>
            <th>{proxy === "kl" ? "KL (nats)" : "SQNR (dB)"}</th>
            <th>{metric.metric}</th>
            <th>Rank gap</th>
            <th>Why it stands out</th>
          </tr>
        </thead>
        <tbody>
          {metric.disagreements.map((d) => (
            <tr key={d.sample_index}>
              <td>
                <button
                  type="button"
                  className="small"
                  onClick={() => {
                    onSample(d.sample_index);
                  }}
                >
                  #{d.sample_index}
                </button>
              </td>
              <td>{d.proxy === null ? "+∞" : formatNumber(d.proxy, 4)}</td>
              <td>{formatNumber(d.value, 4)}</td>
              <td>{formatNumber(d.rank_gap, 3)}</td>
              <td>{disagreementText(d.rank_gap)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function WorstSamples({
  jobId,
  metric,
  proxy,
  onSample,
}: {
  jobId: string;
  metric: TaskMetricProxy;
  proxy: TaskProxyDoc["proxy"];
  onSample: (index: number) => void;
}) {
  const [offset, setOffset] = useState(0);
  const page = useTaskSamples(jobId, metric.metric, offset, PAGE);
  if (page.isPending) return <Loading what="the worst samples" />;
  if (page.isError) return <ErrorMessage error={page.error} />;
  return (
    <div className="panel">
      <h3>Worst samples by {metric.metric}</h3>
      <table className="compact" aria-label={`Samples worst by ${metric.metric}`}>
        <thead>
          <tr>
            <th>Sample</th>
            <th>{metric.metric}</th>
            <th>{proxy === "kl" ? "KL (nats)" : "SQNR (dB)"}</th>
          </tr>
        </thead>
        <tbody>
          {page.data.items.map((s) => (
            <tr key={s.sample_index}>
              <td>
                <button
                  type="button"
                  className="small"
                  onClick={() => {
                    onSample(s.sample_index);
                  }}
                >
                  #{s.sample_index}
                </button>
              </td>
              <td>{formatNumber(s.task_values?.[metric.metric] ?? null, 4)}</td>
              <td>{proxy === "kl" ? formatNumber(s.kl, 4) : s.sqnr_db_infinite ? "+∞" : formatNumber(s.sqnr_db, 4)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager offset={offset} limit={PAGE} total={page.data.total} onChange={setOffset} label="Worst samples pages" />
    </div>
  );
}

export function TaskProxy({ jobId, onSample }: { jobId: string; onSample: (index: number) => void }) {
  const proxy = useTaskProxy(jobId);
  const [chosen, setChosen] = useState<string | null>(null);
  if (proxy.isError && proxy.error instanceof ApiError && proxy.error.status === 404) return null;
  const doc = proxy.data;
  const name = chosen ?? (doc ? defaultMetric(doc.metrics) : null);
  const metric = doc?.metrics.find((m) => m.metric === name);
  return (
    <section aria-labelledby="task-proxy-heading">
      <div className="chart-head">
        <h2 id="task-proxy-heading">Does divergence predict the task?</h2>
        {doc && doc.metrics.length > 1 && (
          <label className="inline">
            Task metric
            <select
              value={name ?? ""}
              onChange={(e) => {
                setChosen(e.target.value);
              }}
            >
              {doc.metrics.map((m) => (
                <option key={m.metric} value={m.metric}>
                  {m.metric}
                </option>
              ))}
            </select>
          </label>
        )}
      </div>
      {proxy.isPending ? (
        <Loading what="the task proxy" />
      ) : proxy.isError ? (
        <ErrorMessage error={proxy.error} />
      ) : !doc || !metric ? (
        <p className="muted">The task stored no per-sample values.</p>
      ) : (
        <>
          <p>{rhoInWords(metric, doc.proxy)}</p>
          <p className="muted">
            Task <code>{doc.task}</code> on output <code>{doc.task_output}</code>; the proxy is the per-sample{" "}
            {doc.proxy === "kl" ? "KL" : "SQNR"} of output <code>{doc.proxy_output}</code>
            {doc.task_output !== doc.proxy_output ? " (another output: read the correlation with care)" : ""}.
          </p>
          <Scatter doc={doc} metric={metric} onSample={onSample} />
          <div className="two-col">
            <Disagreements metric={metric} proxy={doc.proxy} onSample={onSample} />
            <WorstSamples key={metric.metric} jobId={jobId} metric={metric} proxy={doc.proxy} onSample={onSample} />
          </div>
        </>
      )}
    </section>
  );
}
