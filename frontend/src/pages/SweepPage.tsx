// A sweep job's page: every configuration of the model evaluated as a whole (one point each), on a Pareto
// scatter of two objectives with the frontier for those objectives and the bounds, its knee, the points a
// real runtime executes vs those only simulated, those slower than fp32; a point's details and its export;
// every point in a sortable table; the chunks (one per point), live while the sweep runs. The objectives,
// bounds, selected point and sort are in the URL (a permalink).
import { useCallback, useMemo } from "react";
import { useDatasets } from "../api/datasets";
import { useSweepSchema } from "../api/jobs";
import { useSweepFrontier, useSweepPoints } from "../api/sweeps";
import type { Job } from "../api/types";
import { Fact } from "../components/Fact";
import { JobStatusFacts, useJobOfKind } from "../components/JobPage";
import { Empty, QueryView } from "../components/QueryView";
import { ResultPageShell } from "../components/ResultPageShell";
import { replaceRoute } from "../components/router";
import { isObject } from "../lib/json";
import { DEFAULT_COMPARE_QUERY, DEFAULT_SENSITIVITY_QUERY, href } from "../lib/route";
import { toRow, type SweepRow } from "../lib/sweep";
import { runtimeSeries } from "../lib/sweepChart";
import { availableObjectives } from "../lib/sweepObjectives";
import { resolveView, type SweepQuery } from "../lib/sweepQuery";
import { launchAxes, launchBounds, launchTaskBound, learnFrom } from "../lib/sweepTask";
import { isOffline } from "../offline/mode";
import { useNames } from "../project/names";
import { ChunksTable } from "../sensitivity/ChunksTable";
import { ParetoSplit } from "../sweep/ParetoSplit";
import { PointDetails } from "../sweep/PointDetails";
import { PointsTable } from "../sweep/PointsTable";
import { SearchPanel } from "../sweep/SearchPanel";

/** The samples a sweep evaluates: the first max_samples of its dataset, so min(dataset size, requested). */
function samplesEvaluated(requested: unknown, inDataset: number | undefined): string {
  const asked = typeof requested === "number" ? requested : null;
  if (inDataset === undefined) return asked === null ? "—" : `up to ${asked.toLocaleString("en-US")}`;
  const used = asked === null ? inDataset : Math.min(asked, inDataset);
  return `${used.toLocaleString("en-US")}${asked !== null && asked > inDataset ? ` (all of the dataset; ${asked.toLocaleString("en-US")} requested)` : ""}`;
}

function JobFacts({ job, points }: { job: Job; points: number | null }) {
  const name = useNames(job.project_id);
  const datasets = useDatasets(job.project_id);
  const p = job.params;
  const configs = Array.isArray(p.configs) ? p.configs.length : null;
  const mixed = isObject(p.mixed_precision) ? p.mixed_precision : null;
  const plans = mixed && Array.isArray(mixed.average_bits) ? mixed.average_bits.length : 0;
  const batches = Array.isArray(p.latency_batch_sizes) ? p.latency_batch_sizes.join(", ") : "?";
  return (
    <dl className="facts">
      <Fact label="Model">{name(p.model_id)}</Fact>
      <Fact label="Dataset">{name(p.dataset_id)}</Fact>
      <Fact label="Samples">
        {samplesEvaluated(p.max_samples, datasets.data?.find((d) => d.id === p.dataset_id)?.n_samples)}
      </Fact>
      <Fact label="Points">
        {points ?? (configs === null ? "—" : configs + plans + 1)}{" "}
        <span className="muted small-text">
          (fp32 + {configs ?? "?"} configurations{plans ? ` + ${plans.toString()} mixed-precision plans` : ""})
        </span>
      </Fact>
      {mixed && typeof mixed.sensitivity_job_id === "string" && (
        <Fact label="Plans from">
          <a href={href({ page: "sensitivity", jobId: mixed.sensitivity_job_id, query: DEFAULT_SENSITIVITY_QUERY })}>
            sensitivity scan {mixed.sensitivity_job_id.slice(0, 6)}
          </a>
        </Fact>
      )}
      <Fact label="Latency">
        {p.latency === false
          ? "not measured"
          : `batch ${batches} · ${typeof p.latency_repeats === "number" ? p.latency_repeats.toString() : "?"} repeats · ${typeof p.threads === "number" ? p.threads.toString() : "1"} thread(s)`}
      </Fact>
      <Fact label="Run-time memory">
        {p.memory === false ? "not measured" : "peak RSS of an onnxruntime session, in a child process"}
      </Fact>
      <Fact label="Export">{p.export === false ? "off" : "ONNX per point"}</Fact>
      {typeof p.task === "string" && p.task !== "auto" && (
        <Fact label="Task">
          {p.task}
          {Array.isArray(p.bounds) && p.bounds.length > 0 && (
            <span className="muted small-text"> (frontier kept to {p.bounds.join(", ")})</span>
          )}
        </Fact>
      )}
      <JobStatusFacts job={job} />
    </dl>
  );
}

function Results({
  job,
  rows,
  query,
  setQuery,
}: {
  job: Job;
  rows: SweepRow[];
  query: SweepQuery;
  setQuery: (change: Partial<SweepQuery>) => void;
}) {
  const available = useMemo(() => availableObjectives(rows), [rows]);
  // task metrics (task.miou_drop...) take their directions from the API's table in the sweep's schema
  const sweepSchema = useSweepSchema();
  const view = useMemo(() => {
    learnFrom(sweepSchema);
    const launched = isOffline() ? query : launchTaskBound(query, job.params);
    return resolveView(launchAxes(launched, job.params), available);
  }, [query, available, job.params, sweepSchema]);
  // an exported report stores frontiers without bounds only: there the launch's bounds are not applied
  const launched = useMemo(() => (isOffline() ? [] : launchBounds(job.params, available)), [job.params, available]);
  const bounds = useMemo(() => [...view.boundParams, ...launched], [view.boundParams, launched]);
  const frontier = useSweepFrontier([job.id], view.objectiveParams, bounds);
  const series = useMemo(() => runtimeSeries(rows), [rows]);
  const selectedId = query.point === null ? null : `${job.id}:${query.point.split(":").at(-1) ?? ""}`;
  const selected = rows.find((r) => r.id === selectedId) ?? null;
  const select = useCallback(
    (id: string) => {
      setQuery({ point: id.split(":").at(-1) ?? null });
    },
    [setQuery],
  );
  const onFrontier = new Set(frontier.data?.frontier.map((p) => p.id) ?? []);
  if (available.length === 0) return <Empty>The points have no numbers to draw.</Empty>;
  return (
    <>
      <section aria-labelledby="pareto-heading">
        <h2 id="pareto-heading">Trade-offs</h2>
        <ParetoSplit
          title="Pareto frontier"
          filename="sweep-pareto"
          legendNote={`Filled circles run in a real runtime (ONNX Runtime: int8, fp16 or float); open diamonds are simulated only${isObject(job.params.search) ? "; open squares are the search's steps" : ""}.`}
          rows={rows}
          series={series}
          available={available}
          view={view}
          query={query}
          onChange={setQuery}
          frontier={frontier}
          selected={selected?.id ?? null}
          onSelect={select}
        />
      </section>
      <SearchPanel job={job} onSelect={select} />
      <section aria-labelledby="selected-heading">
        <h2 id="selected-heading">Selected point</h2>
        {selected ? (
          <PointDetails
            row={selected}
            onFrontier={onFrontier.has(selected.id)}
            knee={frontier.data?.knee === selected.id}
            slowBatch={view.batch}
            rows={rows}
          />
        ) : (
          <Empty>
            {query.point !== null
              ? `This sweep has no point ${query.point}.`
              : "Click a point of the chart, the frontier list or the table for its fidelity, cost, runtime, latency and export."}
          </Empty>
        )}
      </section>
      <PointsTable
        rows={rows}
        available={available}
        frontier={frontier.data ?? null}
        specs={view.specs}
        batch={view.batch}
        selected={selected?.id ?? null}
        sort={query.sort}
        order={query.order}
        onSort={(sort, order) => {
          setQuery({ sort, order });
        }}
        onSelect={select}
        name={`sweep ${job.id.slice(0, 6)}`}
      />
    </>
  );
}

export function SweepPage({ jobId, query }: { jobId: string; query: SweepQuery }) {
  const page = useJobOfKind(jobId, "sweep");
  const { job } = page;
  const points = useSweepPoints(jobId, page.succeeded);
  const rows = useMemo(() => points.data?.items.map(toRow) ?? [], [points.data]);
  const name = useNames(page.projectId);
  const setQuery = useCallback(
    (change: Partial<SweepQuery>) => {
      replaceRoute({ page: "sweep", jobId, query: { ...query, ...change } });
    },
    [jobId, query],
  );
  const title = job.data ? `Sweep of ${name(job.data.params.model_id)}` : "Sweep";
  return (
    <ResultPageShell
      page={page}
      crumb="Sweep"
      title={title}
      compare={{
        label: "Compare sweeps",
        href: (projectId) =>
          href({
            page: "compare",
            projectId,
            query: {
              ...DEFAULT_COMPARE_QUERY,
              sweeps: [jobId],
              frontier: { ...query, point: null, sort: "index", order: "asc" },
            },
          }),
      }}
      facts={(j) => <JobFacts job={j} points={points.data?.total ?? null} />}
      expected="a sweep"
      noun="sweep"
      results="the Pareto chart appears when every point is evaluated"
      after={(j) => <ChunksTable job={j} />}
    >
      {(j) => (
        <QueryView query={points} what="the sweep's points">
          {() =>
            rows.length === 0 ? (
              <Empty>This sweep stored no points.</Empty>
            ) : (
              <Results job={j} rows={rows} query={query} setQuery={setQuery} />
            )
          }
        </QueryView>
      )}
    </ResultPageShell>
  );
}
