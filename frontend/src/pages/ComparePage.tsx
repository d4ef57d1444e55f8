// Every succeeded fidelity run of a project side by side (GET /projects/{id}/fidelity-runs), best values
// of each column in bold; below, several sweeps on one Pareto frontier and the sensitivity profiles of the
// project's scans overlaid.
import { useState } from "react";
import { useDatasets } from "../api/datasets";
import { useFidelityRuns } from "../api/fidelity";
import { useModels } from "../api/models";
import { useProject } from "../api/projects";
import type { FidelityRun } from "../api/types";
import { Layout } from "../components/Layout";
import { Empty, QueryView } from "../components/QueryView";
import { slug, toCsv } from "../lib/csv";
import { downloadText } from "../lib/download";
import { formatNumber, formatPercent, formatTime } from "../lib/format";
import { DEFAULT_SAMPLE_QUERY, href, type CompareQuery } from "../lib/route";
import { taskColumns, taskValue, type TaskColumn } from "../lib/taskHeadline";
import { replaceRoute } from "../components/router";
import { ProfilesCompare } from "../sensitivity/ProfilesCompare";
import { SweepsCompare } from "../sweep/SweepsCompare";

type Headline = FidelityRun["headline"];
type NumericKey = {
  [K in keyof Headline]-?: Headline[K] extends number | null | undefined ? K : never;
}[keyof Headline];

const COLUMNS: {
  key: NumericKey;
  label: string;
  better: "lower" | "higher";
  format: (v: number | null | undefined) => string;
}[] = [
  { key: "kl_mean_nats", label: "KL mean (nats)", better: "lower", format: (v) => formatNumber(v) },
  { key: "js_mean_nats", label: "JS mean (nats)", better: "lower", format: (v) => formatNumber(v) },
  { key: "top1_match", label: "Top-1 match", better: "higher", format: (v) => formatPercent(v) },
  { key: "topk_agreement", label: "Top-k agreement", better: "higher", format: (v) => formatPercent(v) },
  { key: "cosine_mean", label: "Cosine mean", better: "higher", format: (v) => formatNumber(v, 6) },
  { key: "sqnr_db", label: "SQNR (dB)", better: "higher", format: (v) => formatNumber(v) },
  { key: "top1_accuracy_drop_pp", label: "Accuracy drop (pp)", better: "lower", format: (v) => formatNumber(v) },
  { key: "ece_shift", label: "ECE shift", better: "lower", format: (v) => formatNumber(v) },
];

function best(values_: (number | null | undefined)[], better: "lower" | "higher"): number | null {
  const values = values_.filter((v): v is number => typeof v === "number");
  const [lo, hi] = [Math.min(...values), Math.max(...values)];
  if (values.length < 2 || lo === hi) return null; // nothing to pick between
  return better === "lower" ? lo : hi;
}

function taskCell(c: TaskColumn, v: number | null): string {
  return c.unit === "fraction" ? formatPercent(v) : formatNumber(v);
}

function runsCsv(runs: FidelityRun[]): string {
  const tasks = taskColumns(runs);
  return toCsv(
    [
      "job_id",
      "name",
      "finished_at",
      "golden",
      "compressed",
      "dataset",
      "n_samples",
      "output",
      ...COLUMNS.map((c) => c.key),
      ...tasks.map((c) => c.key),
      "concentration",
    ],
    runs.map((r) => [
      r.job_id,
      r.name,
      r.finished_at,
      r.golden.name,
      r.compressed.name,
      r.dataset.name,
      r.n_samples,
      r.headline.output,
      ...COLUMNS.map((c) => r.headline[c.key]),
      ...tasks.map((c) => taskValue(r, c.metric)),
      r.headline.concentration,
    ]),
  );
}

function RunsTable({ runs, total, projectName }: { runs: FidelityRun[]; total: number; projectName: string }) {
  const bests = COLUMNS.map((c) =>
    best(
      runs.map((r) => r.headline[c.key]),
      c.better,
    ),
  );
  const tasks = taskColumns(runs);
  const taskBests = tasks.map((c) =>
    best(
      runs.map((r) => taskValue(r, c.metric)),
      c.higherIsBetter ? "higher" : "lower",
    ),
  );
  return (
    <section className="panel" aria-labelledby="runs-heading">
      <div className="chart-head">
        <h2 id="runs-heading">
          Fidelity runs{" "}
          <span className="muted small-text">
            ({runs.length < total ? `newest ${runs.length.toString()} of ${total.toString()}` : total.toString()})
          </span>
        </h2>
        <button
          type="button"
          className="small"
          onClick={() => {
            downloadText(`${slug(projectName)}-fidelity-runs.csv`, runsCsv(runs));
          }}
        >
          CSV
        </button>
      </div>
      <div className="scroll">
        <table className="table compare" aria-labelledby="runs-heading">
          <thead>
            <tr>
              <th>Run</th>
              <th>Finished</th>
              <th className="num">Samples</th>
              {COLUMNS.map((c) => (
                <th key={c.key} className="num" title={`${c.better} is better`}>
                  {c.label}
                </th>
              ))}
              {tasks.map((c) => (
                <th key={c.key} className="num" title={`${c.key}: ${c.higherIsBetter ? "higher" : "lower"} is better`}>
                  {c.label}
                </th>
              ))}
              <th>Damage</th>
              <th>
                <span className="visually-hidden">Report</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.job_id}>
                <td>
                  <a href={href({ page: "report", jobId: r.job_id, query: DEFAULT_SAMPLE_QUERY })}>
                    <strong>{r.name || r.compressed.name || "(deleted model)"}</strong>
                  </a>
                  {(r.tags ?? []).length > 0 && <span className="muted small-text"> {(r.tags ?? []).join(", ")}</span>}
                  <div className="muted small-text">
                    {r.name ? `${r.compressed.name ?? "(deleted model)"} ` : ""}vs {r.golden.name ?? "(deleted model)"}{" "}
                    on {r.dataset.name ?? "(deleted dataset)"}
                  </div>
                </td>
                <td>{formatTime(r.finished_at)}</td>
                <td className="num">{r.n_samples.toLocaleString("en-US")}</td>
                {COLUMNS.map((c, i) => {
                  const value = r.headline[c.key];
                  return (
                    <td key={c.key} className={`num${value !== null && value === bests[i] ? " best" : ""}`}>
                      {c.format(value)}
                    </td>
                  );
                })}
                {tasks.map((c, i) => {
                  const value = taskValue(r, c.metric);
                  return (
                    <td key={c.key} className={`num${value !== null && value === taskBests[i] ? " best" : ""}`}>
                      {taskCell(c, value)}
                    </td>
                  );
                })}
                <td>{r.headline.concentration ?? "—"}</td>
                <td>
                  <a href={href({ page: "report", jobId: r.job_id, query: DEFAULT_SAMPLE_QUERY })}>Report</a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p className="muted small-text">
        Numbers of each run's primary output; task columns (named as sweeps and budgets name them) for the runs that
        scored a task. Bold: the best value of a column.
      </p>
    </section>
  );
}

export function ComparePage({ projectId, query }: { projectId: string; query: CompareQuery }) {
  const project = useProject(projectId);
  const models = useModels(projectId).data ?? [];
  const datasets = useDatasets(projectId).data ?? [];
  const [filters, setFilters] = useState({ golden: "", dataset: "" });
  const runs = useFidelityRuns(projectId, filters);
  const name = project.data?.name ?? "Project";
  return (
    <Layout
      crumbs={[
        { label: "Projects", href: href({ page: "projects" }) },
        { label: name, href: href({ page: "project", projectId }) },
        { label: "Compare runs" },
      ]}
      title={`Compare runs: ${name}`}
    >
      <form
        className="filters panel"
        aria-label="Filter runs"
        onSubmit={(e) => {
          e.preventDefault();
        }}
      >
        <label className="inline">
          Golden model
          <select
            value={filters.golden}
            onChange={(e) => {
              setFilters({ ...filters, golden: e.target.value });
            }}
          >
            <option value="">any</option>
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
        <label className="inline">
          Dataset
          <select
            value={filters.dataset}
            onChange={(e) => {
              setFilters({ ...filters, dataset: e.target.value });
            }}
          >
            <option value="">any</option>
            {datasets.map((d) => (
              <option key={d.id} value={d.id}>
                {d.name}
              </option>
            ))}
          </select>
        </label>
      </form>
      <QueryView query={runs} what="fidelity runs">
        {(page) =>
          page.total === 0 ? (
            <Empty>
              No succeeded fidelity runs{filters.golden || filters.dataset ? " match these filters" : " yet"}.
            </Empty>
          ) : (
            <RunsTable runs={page.items} total={page.total} projectName={name} />
          )
        }
      </QueryView>
      <SweepsCompare
        projectId={projectId}
        query={query}
        onChange={(next) => {
          replaceRoute({ page: "compare", projectId, query: next });
        }}
      />
      <ProfilesCompare
        projectId={projectId}
        query={query}
        onChange={(next) => {
          replaceRoute({ page: "compare", projectId, query: next });
        }}
      />
    </Layout>
  );
}
