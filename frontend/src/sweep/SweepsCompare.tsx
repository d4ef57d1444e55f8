// The compare page's sweep section: several sweeps of the project on one Pareto chart (points coloured per
// sweep) with one frontier over all their points, for the same objectives and bounds as a sweep's page. The
// sweeps, objectives, bounds and the selected point are in the URL.
import { useCallback, useMemo } from "react";
import { useSweepSchema } from "../api/jobs";
import { useManySweepPoints, useSweepFrontier, useSweepJobs } from "../api/sweeps";
import type { Job } from "../api/types";
import { CompareSection, JobPicker } from "../components/CompareSection";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { DEFAULT_SWEEP_QUERY, href, type CompareQuery } from "../lib/route";
import { toRow, type SweepRow } from "../lib/sweep";
import { sweepSeries } from "../lib/sweepChart";
import { availableObjectives, objectiveInfo } from "../lib/sweepObjectives";
import { resolveView, type SweepQuery } from "../lib/sweepQuery";
import { learnFrom } from "../lib/sweepTask";
import { useNames } from "../project/names";
import { ParetoSplit } from "./ParetoSplit";

/** Sweeps drawn when the URL names none. */
const DEFAULT_SWEEPS = 3;
/** The frontier endpoint takes at most this many. */
const MAX_SWEEPS = 50;

export function sweepName(job: Pick<Job, "id" | "params">, name: (id: unknown) => string): string {
  return `${name(job.params.model_id)} · ${job.id.slice(0, 6)}`;
}

function SelectedPoint({ row, query, sweep }: { row: SweepRow; query: SweepQuery; sweep: string }) {
  const names = [
    "kl_mean",
    "top1_agreement",
    "sqnr_db",
    "size_bytes",
    "compression_ratio",
    "latency_p50_ms_b1",
    "runtime_memory_mib",
  ];
  return (
    <div className="panel compare-point" role="region" aria-label="Selected point">
      <strong>
        <code>{row.label}</code>
      </strong>{" "}
      <span className="muted">
        of {sweep} — {row.description}
      </span>
      <div className="small-text">
        {names
          .filter((n) => n in row.objectives)
          .map((n) => `${objectiveInfo(n).label}: ${objectiveInfo(n).format(row.objectives[n])}`)
          .join(" · ")}
      </div>
      <a
        href={href({
          page: "sweep",
          jobId: row.jobId,
          query: { ...query, point: row.index.toString(), sort: "index", order: "asc" },
        })}
      >
        Open it in its sweep (details, latency, export) →
      </a>
    </div>
  );
}

export function SweepsCompare({
  projectId,
  query,
  onChange,
}: {
  projectId: string;
  query: CompareQuery;
  onChange: (query: CompareQuery) => void;
}) {
  const jobs = useSweepJobs(projectId);
  const name = useNames(projectId);
  const items = useMemo(() => jobs.data?.items ?? [], [jobs.data]);
  const selected = useMemo(
    () => (query.sweeps.length > 0 ? query.sweeps : items.slice(0, DEFAULT_SWEEPS).map((j) => j.id)),
    [query.sweeps, items],
  );
  const { pending, error: failed, pages } = useManySweepPoints(selected);
  const rows = useMemo(() => pages.flatMap((d) => d?.items.map(toRow) ?? []), [pages]);
  const sweepNames = useMemo(() => {
    const names = new Map<string, string>();
    for (const id of selected) {
      const job = items.find((j) => j.id === id);
      names.set(id, job ? sweepName(job, name) : `sweep ${id.slice(0, 6)}`);
    }
    return names;
  }, [selected, items, name]);
  const series = useMemo(
    () =>
      sweepSeries(
        rows,
        selected.map((id) => ({ id, name: sweepNames.get(id) ?? id })),
      ),
    [rows, selected, sweepNames],
  );
  const colors = useMemo(() => new Map(series.map((s) => [s.key, s.color])), [series]);
  const available = useMemo(() => availableObjectives(rows), [rows]);
  const frontierQuery = query.frontier;
  const sweepSchema = useSweepSchema(); // task metrics' directions (task.miou_drop: min...)
  const view = useMemo(() => {
    learnFrom(sweepSchema);
    return resolveView(frontierQuery, available);
  }, [frontierQuery, available, sweepSchema]);
  const frontier = useSweepFrontier(pending || failed !== null ? [] : selected, view.objectiveParams, view.boundParams);
  const setFrontier = useCallback(
    (change: Partial<SweepQuery>) => {
      onChange({ ...query, sweeps: selected, frontier: { ...query.frontier, ...change } });
    },
    [onChange, query, selected],
  );
  const select = useCallback(
    (id: string) => {
      setFrontier({ point: id });
    },
    [setFrontier],
  );
  const chosen = rows.find((r) => r.id === query.frontier.point) ?? null;
  return (
    <CompareSection
      className="sweeps-compare"
      headingId="sweeps-heading"
      title="Sweeps on one frontier"
      intro="The points of several sweeps (e.g. two models, or one model on two datasets) and the Pareto frontier over all of them, for the same objectives and bounds."
      jobs={jobs}
      what="sweeps"
      none="No succeeded sweeps yet: launch one from the project page."
      available={items.length}
      selected={selected.length}
      tickOne="Tick at least one sweep."
      picker={
        <JobPicker
          legend="Sweeps on the chart"
          jobs={items}
          selected={selected}
          name={name}
          max={MAX_SWEEPS}
          colors={colors}
          open={(job) => ({
            href: href({ page: "sweep", jobId: job.id, query: DEFAULT_SWEEP_QUERY }),
            label: `Open the sweep ${job.id.slice(0, 6)}`,
          })}
          onChange={(ids) => {
            onChange({ ...query, sweeps: ids, frontier: { ...query.frontier, point: null } });
          }}
        />
      }
    >
      {() =>
        pending ? (
          <Loading what="the sweeps' points" />
        ) : failed !== null ? (
          <ErrorMessage error={failed} />
        ) : available.length === 0 ? (
          <Empty>These sweeps have no numbers to draw.</Empty>
        ) : (
          <>
            <ParetoSplit
              title="Sweeps' Pareto frontier"
              filename="sweeps-pareto"
              legendNote="Colours: sweeps. The frontier runs over the points of every sweep shown."
              rows={rows}
              series={series}
              available={available}
              view={view}
              query={query.frontier}
              onChange={setFrontier}
              frontier={frontier}
              selected={chosen?.id ?? null}
              onSelect={select}
              sweepNames={sweepNames}
              listSweepNames={selected.length > 1}
            />
            {chosen && (
              <SelectedPoint row={chosen} query={query.frontier} sweep={sweepNames.get(chosen.jobId) ?? chosen.jobId} />
            )}
          </>
        )
      }
    </CompareSection>
  );
}
