// A sensitivity job's page: which layers tolerate which compression. The layers × configurations heatmap
// (each layer alone, or all but it), the ranking, the selected layer's metadata and channel importance, the
// whole-model row, the mixed-precision plans and the chunks the scan was split into (live while it runs).
// The view, the ranking, the selected layer and the importance method live in the URL (a permalink).
import { useCallback } from "react";
import { ApiError } from "../api/http";
import { useSensitivityReport, type ImportanceMethod } from "../api/sensitivity";
import type { Job, SensitivityReport } from "../api/types";
import { Fact } from "../components/Fact";
import { JobStatusFacts, useJobOfKind } from "../components/JobPage";
import { Notes } from "../components/Notes";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { ResultPageShell } from "../components/ResultPageShell";
import { replaceRoute } from "../components/router";
import { DEFAULT_COMPARE_QUERY, href, type SensitivityQuery } from "../lib/route";
import { proxyMetric } from "../lib/sensitivity";
import { taskMetricLabel } from "../lib/sensitivityTask";
import { useNames } from "../project/names";
import { ChunksTable } from "../sensitivity/ChunksTable";
import { LayerDetails, methodsOf } from "../sensitivity/LayerDetails";
import { RankingList } from "../sensitivity/RankingList";
import { screeningSummary } from "../sensitivity/screening";
import { SensitivityHeatmap } from "../sensitivity/SensitivityHeatmap";
import { TaskSensitivity } from "../sensitivity/TaskSensitivity";
import { PlansSection, WholeModelTable } from "../sensitivity/WholeModelAndPlans";

function JobFacts({ job, report }: { job: Job; report: SensitivityReport | undefined }) {
  const name = useNames(job.project_id);
  const p = job.params;
  const configs = Array.isArray(p.configs) ? p.configs.length : null;
  return (
    <dl className="facts">
      <Fact label="Model">{name(p.model_id)}</Fact>
      <Fact label="Dataset">{name(p.dataset_id)}</Fact>
      {report?.calibration && (
        <Fact label="Calibrated on">
          {report.calibration.count?.toLocaleString("en-US")} samples{" "}
          {report.calibration.source === "held_out"
            ? `held out of ${name(p.dataset_id)} (not measured)`
            : `of ${name(report.calibration.dataset_id ?? "")}`}
        </Fact>
      )}
      <Fact label="Samples">
        {report
          ? report.n_samples.toLocaleString("en-US")
          : typeof p.max_samples === "number"
            ? `up to ${p.max_samples.toLocaleString("en-US")}`
            : "—"}
      </Fact>
      <Fact label="Configurations">{configs ?? "—"}</Fact>
      {report && (
        <>
          <Fact label="Layers scanned">
            {report.matrix.rows.length} of {report.layers.length}
          </Fact>
          <Fact label="Output">
            <code>{report.primary_output}</code> ({report.output_kind})
          </Fact>
          <Fact label="Ranked by">
            {report.rank_by
              ? `${taskMetricLabel(report.rank_by)} (task ${report.task})`
              : proxyMetric(report) === "kl"
                ? "KL mean"
                : "−SQNR"}
          </Fact>
          {report.batch_size != null && (
            <Fact label="Batch">
              {report.batch_size} samples per run
              {p.batch_size == null ? " (chosen for this model's activation size)" : ""}
            </Fact>
          )}
        </>
      )}
      <JobStatusFacts job={job} />
    </dl>
  );
}

function ViewToggle({
  view,
  onChange,
}: {
  view: SensitivityQuery["view"];
  onChange: (v: SensitivityQuery["view"]) => void;
}) {
  const options: { value: SensitivityQuery["view"]; label: string }[] = [
    { value: "only", label: "Only this layer compressed" },
    { value: "all_but", label: "All but this layer compressed" },
  ];
  return (
    <div className="segmented" role="radiogroup" aria-label="Heatmap view">
      {options.map((o) => (
        <label key={o.value} className={o.value === view ? "checked" : undefined}>
          <input
            type="radio"
            name="sensitivity-view"
            value={o.value}
            checked={o.value === view}
            onChange={() => {
              onChange(o.value);
            }}
          />
          {o.label}
        </label>
      ))}
    </div>
  );
}

function Results({
  job,
  report,
  whole,
  query,
  hasAllBut,
  setQuery,
}: {
  job: Job;
  report: SensitivityReport;
  /** The report with the whole-model row (the "only" one). */
  whole: SensitivityReport;
  query: SensitivityQuery;
  hasAllBut: boolean;
  setQuery: (change: Partial<SensitivityQuery>) => void;
}) {
  const methods = methodsOf(job.params);
  const method = methods.find((m) => m === query.method) ?? methods[0] ?? null;
  const ranking = query.ranking !== null && report.matrix.columns.includes(query.ranking) ? query.ranking : null;
  const select = useCallback(
    (layer: string) => {
      setQuery({ layer });
    },
    [setQuery],
  );
  const layer = query.layer;
  return (
    <>
      <Notes notes={report.notes} />
      {screeningSummary(report) && (
        <p className="note" role="status" data-testid="screening-summary">
          Screened scan: {screeningSummary(report)}. Estimated layers are marked “est.” in the ranking.
        </p>
      )}
      <section aria-labelledby="matrix-heading">
        <div className="chart-head">
          <h2 id="matrix-heading">Layers × configurations</h2>
          {hasAllBut && (
            <ViewToggle
              view={query.view}
              onChange={(view) => {
                setQuery({ view });
              }}
            />
          )}
        </div>
        {report.matrix.rows.length === 0 ? (
          <Empty>No layer was scanned.</Empty>
        ) : (
          <div className="split sensitivity-split">
            <SensitivityHeatmap report={report} selected={layer} onSelect={select} />
            <RankingList
              report={report}
              config={ranking}
              selected={layer}
              onConfig={(config) => {
                setQuery({ ranking: config });
              }}
              onSelect={select}
            />
          </div>
        )}
      </section>
      <TaskSensitivity report={report} config={ranking} selected={layer} onSelect={select} />
      <section aria-labelledby="layer-heading">
        <div className="chart-head">
          <h2 id="layer-heading">Selected layer</h2>
          <label className="inline">
            Layer
            <select
              value={layer ?? ""}
              onChange={(e) => {
                setQuery({ layer: e.target.value || null });
              }}
            >
              <option value="">Choose a layer…</option>
              {report.layers.map((l) => (
                <option key={l.name} value={l.name}>
                  {l.name} ({l.type})
                </option>
              ))}
            </select>
          </label>
        </div>
        {layer === null ? (
          <Empty>
            Click a cell of the heatmap or a layer of the ranking to see its metadata and channel importance.
          </Empty>
        ) : (
          <LayerDetails
            jobId={job.id}
            report={report}
            layer={layer}
            methods={methods}
            method={method}
            onMethod={(m: ImportanceMethod) => {
              setQuery({ method: m });
            }}
          />
        )}
      </section>
      <h2>Whole model and mixed precision</h2>
      <WholeModelTable report={whole} />
      <PlansSection jobId={job.id} />
    </>
  );
}

export function SensitivityPage({ jobId, query }: { jobId: string; query: SensitivityQuery }) {
  const page = useJobOfKind(jobId, "sensitivity");
  const { job, succeeded } = page;
  const hasAllBut = job.data?.params.all_but === true;
  const view = hasAllBut ? query.view : "only";
  // The "only" matrix carries the whole-model row in both views; the all-but one is read when shown.
  const only = useSensitivityReport(jobId, "only", succeeded);
  const allBut = useSensitivityReport(jobId, "all_but", succeeded && view === "all_but");
  const report = view === "all_but" ? allBut : only;
  const name = useNames(page.projectId);
  const setQuery = useCallback(
    (change: Partial<SensitivityQuery>) => {
      replaceRoute({ page: "sensitivity", jobId, query: { ...query, ...change } });
    },
    [jobId, query],
  );
  const title = job.data ? `Sensitivity of ${name(job.data.params.model_id)}` : "Sensitivity scan";
  return (
    <ResultPageShell
      page={page}
      crumb="Sensitivity scan"
      title={title}
      compare={{
        label: "Compare scans",
        href: (projectId) => href({ page: "compare", projectId, query: { ...DEFAULT_COMPARE_QUERY, jobs: [jobId] } }),
      }}
      facts={(j) => <JobFacts job={j} report={report.data} />}
      expected="a sensitivity scan"
      noun="scan"
      results="the heatmap appears when it succeeds"
      after={(j) => <ChunksTable job={j} />}
    >
      {(j) =>
        report.isPending ? (
          <Loading what="the sensitivity matrix" />
        ) : report.isError ? (
          report.error instanceof ApiError && report.error.status === 404 && view === "all_but" ? (
            <Empty>This scan has no all-but view: it ran with all_but set to false.</Empty>
          ) : (
            <ErrorMessage error={report.error} />
          )
        ) : (
          <Results
            job={j}
            report={report.data}
            whole={only.data ?? report.data}
            query={{ ...query, view }}
            hasAllBut={hasAllBut}
            setQuery={setQuery}
          />
        )
      }
    </ResultPageShell>
  );
}
