// A fidelity job's report: verdict, metric cards, charts and the per-sample table.
import { useMemo, useState } from "react";
import { useFidelityReport } from "../api/fidelity";
import type { FidelityReport, Job } from "../api/types";
import { Fact } from "../components/Fact";
import { JobStatusFacts, useJobOfKind } from "../components/JobPage";
import { Notes } from "../components/Notes";
import { QueryView } from "../components/QueryView";
import { ResultPageShell } from "../components/ResultPageShell";
import { replaceRoute } from "../components/router";
import { formatNumber } from "../lib/format";
import { readCalibration, readSummary } from "../lib/summary";
import { href, type SampleQuery } from "../lib/route";
import { useNames } from "../project/names";
import { AttentionMaps } from "../report/AttentionMaps";
import { ClassDamage } from "../report/ClassDamage";
import { DivergenceHistogram } from "../report/DivergenceHistogram";
import { LayerProfileSection } from "../report/LayerProfileChart";
import { MetricCards } from "../report/MetricCards";
import { ReliabilityChart } from "../report/ReliabilityChart";
import { Robustness } from "../report/Robustness";
import { SamplesTable } from "../report/SamplesTable";
import { SequenceFidelity } from "../report/SequenceFidelity";
import { TaskBreakdown } from "../report/TaskBreakdown";
import { TaskProxy } from "../report/TaskProxy";
import { Verdict } from "../report/Verdict";

function JobFacts({ job }: { job: Job }) {
  const name = useNames(job.project_id);
  const p = job.params;
  return (
    <dl className="facts">
      <Fact label="Golden">{name(p.golden_model_id)}</Fact>
      <Fact label="Compressed">{name(p.compressed_model_id)}</Fact>
      <Fact label="Dataset">{name(p.dataset_id)}</Fact>
      <Fact label="Top-k">{String(p.top_k)}</Fact>
      <Fact label="KL threshold">{typeof p.threshold_kl === "number" ? formatNumber(p.threshold_kl) : "—"} nats</Fact>
      <Fact label="Batch size">{String(p.batch_size)}</Fact>
      <JobStatusFacts job={job} />
    </dl>
  );
}

function Report({ job, report, query }: { job: Job; report: FidelityReport; query: SampleQuery }) {
  const summary = useMemo(() => readSummary(report.summary), [report]);
  const [output, setOutput] = useState(summary.primaryOutput);
  const metrics = useMemo(() => summary.outputs[output] ?? null, [summary, output]);
  const calibrations = useMemo(
    () => (["golden", "compressed"] as const).map((role) => ({ role, calibration: readCalibration(metrics, role) })),
    [metrics],
  );
  const setQuery = (change: Partial<SampleQuery>) => {
    replaceRoute({ page: "report", jobId: job.id, query: { ...query, ...change } });
  };
  const measure = summary.concentration?.measure === "mse" ? "mse" : "kl";
  const outputNames = Object.keys(summary.outputs);
  return (
    <>
      <Verdict summary={summary} />
      <Notes notes={summary.warnings} className="warning" />
      <Notes notes={summary.notes} />
      <section aria-labelledby="metrics-heading">
        <div className="chart-head">
          <h2 id="metrics-heading">
            Metrics of output <code>{output}</code>
          </h2>
          {outputNames.length > 1 && (
            <label className="inline">
              Output
              <select
                value={output}
                onChange={(e) => {
                  setOutput(e.target.value);
                }}
              >
                {outputNames.map((o) => (
                  <option key={o} value={o}>
                    {o}
                    {o === summary.primaryOutput ? " (primary)" : ""}
                  </option>
                ))}
              </select>
            </label>
          )}
        </div>
        {metrics && <MetricCards metrics={metrics} />}
      </section>
      {metrics && <TaskBreakdown metrics={metrics} />}
      <section aria-label="Charts" className="charts">
        <DivergenceHistogram
          jobId={job.id}
          output={summary.perSampleOutput}
          measure={measure}
          threshold={measure === "kl" ? summary.thresholdKl : null}
          selected={query.sample}
        />
        <div className="two-col">
          {calibrations.map(({ role, calibration }) =>
            calibration ? <ReliabilityChart key={role} role={role} calibration={calibration} /> : null,
          )}
        </div>
        {calibrations.every((c) => !c.calibration) && (
          <p className="muted">No reliability diagrams: they need a classification output and a dataset with labels.</p>
        )}
      </section>
      <LayerProfileSection jobId={job.id} />
      {/* Each "why it diverges" document is asked for only when the report lists it (the others are 404s). */}
      {(report.diagnostics ?? []).includes("classes") && (
        <ClassDamage
          jobId={job.id}
          onSample={(sample) => {
            setQuery({ sample });
          }}
        />
      )}
      {(report.diagnostics ?? []).includes("task") && (
        <TaskProxy
          jobId={job.id}
          onSample={(sample) => {
            setQuery({ sample });
          }}
        />
      )}
      {(report.diagnostics ?? []).includes("sequence") && <SequenceFidelity jobId={job.id} />}
      {(report.diagnostics ?? []).includes("attention") && <AttentionMaps jobId={job.id} />}
      {(report.diagnostics ?? []).includes("robustness") && (
        <Robustness
          jobId={job.id}
          onSample={(sample) => {
            setQuery({ sample });
          }}
        />
      )}
      <SamplesTable
        jobId={job.id}
        output={summary.perSampleOutput}
        query={query}
        onChange={setQuery}
        datasetId={typeof job.params.dataset_id === "string" ? job.params.dataset_id : undefined}
        taskSamples={(report.diagnostics ?? []).includes("task_samples")}
      />
    </>
  );
}

export function ReportPage({ jobId, query }: { jobId: string; query: SampleQuery }) {
  const page = useJobOfKind(jobId, "fidelity");
  const report = useFidelityReport(jobId, page.succeeded);
  return (
    <ResultPageShell
      page={page}
      crumb="Fidelity report"
      title="Fidelity report"
      compare={{ label: "Compare runs", href: (projectId) => href({ page: "compare", projectId }) }}
      facts={(job) => <JobFacts job={job} />}
      expected="a fidelity job"
      noun="job"
      results="the report appears when it succeeds"
    >
      {(job) => (
        <QueryView query={report} what="the report">
          {(data) => <Report job={job} report={data} query={query} />}
        </QueryView>
      )}
    </ResultPageShell>
  );
}
