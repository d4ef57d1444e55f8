// Trends: the fidelity of a golden model's family (every succeeded fidelity job against it) run after run, so
// a team sees whether this release is worse than the last. One metric at a time, chosen from a select; each
// point is labelled with the compressed model and the tags, with ±2 standard errors as error bars where the API
// serves them; the latest point is marked when it is worse than the one before beyond the two runs' noise,
// 2·√(se_prev² + se_last²), or a fixed threshold where a run has no spread for the metric (./trends.ts).
import type { Data, Layout } from "plotly.js";
import { useMemo, useState } from "react";
import { useDatasets } from "../api/datasets";
import { useRunsAsCompressed } from "../api/fidelity";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber, formatTime } from "../lib/format";
import { DEFAULT_SAMPLE_QUERY, href } from "../lib/route";
import { type TrendPoint, useFidelityTrend } from "./trendQueries";
import {
  NOISE_MULTIPLE,
  specOf,
  trendMetricOptions,
  type TrendMetric,
  latestVerdict,
  metricValue,
  pointLabel,
  ruleText,
  standardError,
  fractionRange,
} from "./trends";

const LAYOUT: Partial<Layout> = {
  xaxis: { title: { text: "finished" }, type: "date", automargin: true },
  margin: { l: 60, r: 20, t: 32, b: 60 },
  showlegend: false,
};

function chartData(points: TrendPoint[], metric: TrendMetric, worse: boolean): Data[] {
  const shown = points.filter((p) => metricValue(p, metric) !== null);
  const x = shown.map((p) => p.finished_at ?? p.created_at);
  const y = shown.map((p) => metricValue(p, metric));
  const bars = shown.map((p) => {
    const se = standardError(p, metric);
    return se === null ? null : NOISE_MULTIPLE * se;
  });
  const data: Data[] = [
    {
      type: "scatter",
      mode: "lines+markers",
      x,
      y,
      marker: { size: 9, color: "#4c78a8" },
      line: { color: "#4c78a8" },
      ...(bars.some((b) => b !== null)
        ? { error_y: { type: "data" as const, array: bars, visible: true, color: "#9ab" } }
        : {}),
      hovertext: shown.map((p) => `${pointLabel(p)}<br>${formatTime(p.finished_at)}`),
      hoverinfo: "y+text",
    },
  ];
  const last = shown.length - 1;
  if (worse && last >= 0) {
    data.push({
      type: "scatter",
      mode: "text+markers",
      x: x.slice(last),
      y: y.slice(last),
      marker: { size: 18, color: "rgba(0,0,0,0)", line: { color: "#c0392b", width: 3 } },
      text: ["worse than the last run"],
      textposition: "top left",
      textfont: { color: "#c0392b" },
      hoverinfo: "skip",
    });
  }
  return data;
}

/** A model with no run as the golden side: where its runs as the compressed side are, if any. */
function AsCompressed({ projectId, modelId }: { projectId: string; modelId: string }) {
  const runs = useRunsAsCompressed(projectId, modelId);
  const items = runs.data?.items ?? [];
  if (items.length === 0) {
    return <Empty>No finished fidelity job compares a model against this one yet.</Empty>;
  }
  const goldens = [...new Map(items.map((r) => [r.golden.id, r.golden])).values()];
  return (
    <Empty>
      This model is the compressed side of {runs.data?.total ?? items.length} finished run
      {(runs.data?.total ?? items.length) === 1 ? "" : "s"}; their trends are drawn on the golden model&apos;s page:{" "}
      {goldens.map((g, i) => (
        <span key={g.id}>
          {i > 0 && ", "}
          <a href={href({ page: "model", modelId: g.id })}>{g.name ?? "(deleted model)"}</a>
        </span>
      ))}
      .
    </Empty>
  );
}

export function Trends({ projectId, goldenModelId }: { projectId: string; goldenModelId: string }) {
  const [metric, setMetric] = useState<TrendMetric>("top1_match");
  const [datasetId, setDatasetId] = useState<string>("");
  const datasets = useDatasets(projectId);
  const trend = useFidelityTrend(projectId, goldenModelId, datasetId || null);
  const points = useMemo(() => trend.data?.points ?? [], [trend.data]);
  const worse = latestVerdict(points, metric).worse;
  const spec = specOf(metric, points);
  const data = useMemo(() => chartData(points, metric, worse), [points, metric, worse]);
  return (
    <section className="panel" aria-labelledby="trends-heading" data-testid="trends">
      <div className="chart-head">
        <h2 id="trends-heading">Trends</h2>
        <div className="filters">
          <label className="inline">
            Metric
            <select
              value={metric}
              onChange={(e) => {
                setMetric(e.target.value as TrendMetric);
              }}
            >
              {trendMetricOptions(points).map((m) => (
                <option key={m.key} value={m.key}>
                  {m.label}
                </option>
              ))}
            </select>
          </label>
          <label className="inline">
            Dataset
            <select
              value={datasetId}
              onChange={(e) => {
                setDatasetId(e.target.value);
              }}
            >
              <option value="">any</option>
              {(datasets.data ?? []).map((d) => (
                <option key={d.id} value={d.id}>
                  {d.name}
                </option>
              ))}
            </select>
          </label>
        </div>
      </div>
      {trend.isPending && <Loading what="the trend" />}
      {trend.isError && <ErrorMessage error={trend.error} />}
      {trend.data &&
        (points.length === 0 ? (
          <AsCompressed projectId={projectId} modelId={goldenModelId} />
        ) : (
          <ChartPanel
            title={`${spec.label} across runs`}
            caption={
              <>
                Each succeeded fidelity job against this golden model, oldest first
                {trend.data.total > points.length
                  ? ` (the newest ${points.length.toString()} of ${trend.data.total.toString()})`
                  : ""}
                ; {spec.higherIsBetter ? "higher" : "lower"} is better.{" "}
                <span data-testid="trend-rule">{ruleText(points, metric)}</span>
                {worse && <strong className="error"> The latest run is worse than the last.</strong>}
              </>
            }
            csv={() => ({
              header: ["job_id", "finished_at", "compressed_model", "tags", metric],
              rows: points.map((p) => [
                p.job_id,
                p.finished_at ?? "",
                p.compressed.name ?? "",
                pointLabel(p),
                metricValue(p, metric),
              ]),
            })}
          >
            <Plot
              data={data}
              layout={{
                ...LAYOUT,
                yaxis: {
                  title: { text: spec.label },
                  automargin: true,
                  ...(spec.fraction ? { range: fractionRange(points.map((p) => metricValue(p, metric))) } : {}),
                },
              }}
              filename="trend"
            />
            <ol className="trend-runs small-text">
              {points.map((p) => (
                <li key={p.job_id}>
                  <a href={href({ page: "report", jobId: p.job_id, query: DEFAULT_SAMPLE_QUERY })}>{pointLabel(p)}</a>:{" "}
                  {formatNumber(metricValue(p, metric))} ({formatTime(p.finished_at)})
                </li>
              ))}
            </ol>
          </ChartPanel>
        ))}
    </section>
  );
}
