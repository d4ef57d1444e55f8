// The compare page's sensitivity section: overlaid profiles of several sensitivity scans (e.g. a CNN, a
// transformer and an LSTM) on a normalised depth axis for one configuration they all have, and the mean
// score per layer type. The scans and the configuration are in the URL.
import { useMemo } from "react";
import { useSensitivityJobs, useSensitivityProfiles } from "../api/sensitivity";
import type { Job, SensitivityComparison } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { formatTime } from "../lib/format";
import { DEFAULT_SENSITIVITY_QUERY, href, type CompareQuery } from "../lib/route";
import {
  byTypeCsv,
  byTypeFigure,
  countUndrawn,
  pickConfig,
  profileLabel,
  profilesCsv,
  profileFigure,
  selectProfiles,
} from "../lib/sensitivityCompare";
import { useNames } from "../project/names";

/** Scans overlaid when the URL names none. */
const DEFAULT_SCANS = 3;
/** The API compares at most this many. */
const MAX_SCANS = 20;

function Charts({
  comparison,
  config,
  onConfig,
}: {
  comparison: SensitivityComparison;
  config: string | null;
  onConfig: (config: string) => void;
}) {
  const { metric, drawn, excluded } = useMemo(() => selectProfiles(comparison.profiles), [comparison]);
  const chosen = pickConfig(comparison.common_configs, config);
  const depth = useMemo(() => (chosen ? profileFigure(drawn, chosen, metric) : null), [drawn, chosen, metric]);
  const types = useMemo(() => (chosen ? byTypeFigure(drawn, chosen, metric) : null), [drawn, chosen, metric]);
  if (!chosen || !depth || !types)
    return <Empty>These scans have no configuration in common: choose scans run with the same configurations.</Empty>;
  const undrawn = countUndrawn(drawn, chosen, metric);
  return (
    <>
      <label className="inline">
        Configuration
        <select
          value={chosen}
          onChange={(e) => {
            onConfig(e.target.value);
          }}
        >
          {comparison.common_configs.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
        <span className="muted small-text">(those every chosen scan has)</span>
      </label>
      {excluded.length > 0 && (
        <p className="warning">
          Not drawn: {excluded.map(profileLabel).join(", ")}, ranked by {metric === "kl" ? "SQNR" : "KL"} (not a
          classifier&apos;s output like the first scan), which cannot share an axis with the others.
        </p>
      )}
      <div className="two-col">
        <ChartPanel
          title="Sensitivity against depth"
          csv={() => profilesCsv(drawn, chosen)}
          caption={[
            `Each layer compressed alone with ${chosen}; x: the layer's depth scaled to 0 (first) … 1 (last), so models of different depths line up.`,
            metric === "kl" ? "KL mean, log scale." : "Output SQNR, axis reversed (up = more damage).",
            undrawn > 0 ? `${undrawn.toString()} values are missing or 0 (not on the log axis).` : "",
          ]
            .filter(Boolean)
            .join(" ")}
        >
          <Plot data={depth.data} layout={depth.layout} filename="sensitivity-profiles" height={380} />
        </ChartPanel>
        <ChartPanel
          title="Sensitivity by layer type"
          csv={() => byTypeCsv(drawn, chosen)}
          caption={`Mean over the layers of each type, with ${chosen}. Hover for how many layers each bar averages.`}
        >
          <Plot data={types.data} layout={types.layout} filename="sensitivity-by-layer-type" height={380} />
        </ChartPanel>
      </div>
    </>
  );
}

function ScanPicker({
  jobs,
  selected,
  onChange,
  name,
}: {
  jobs: Job[];
  selected: string[];
  onChange: (jobs: string[]) => void;
  name: (id: unknown) => string;
}) {
  return (
    <fieldset className="fields scan-picker">
      <legend>Scans to overlay</legend>
      <ul className="plain">
        {jobs.map((job) => {
          const checked = selected.includes(job.id);
          const configs = Array.isArray(job.params.configs) ? job.params.configs.length : 0;
          return (
            <li key={job.id}>
              <label className="inline">
                <input
                  type="checkbox"
                  checked={checked}
                  disabled={!checked && selected.length >= MAX_SCANS}
                  onChange={() => {
                    onChange(checked ? selected.filter((id) => id !== job.id) : [...selected, job.id]);
                  }}
                />
                <span>
                  <strong>{name(job.params.model_id)}</strong>{" "}
                  <span className="muted small-text">
                    on {name(job.params.dataset_id)} · {configs} configurations · {formatTime(job.finished_at)} ·{" "}
                    <code>{job.id.slice(0, 6)}</code>
                  </span>
                </span>
              </label>{" "}
              <a
                className="small-text"
                href={href({ page: "sensitivity", jobId: job.id, query: DEFAULT_SENSITIVITY_QUERY })}
                aria-label={`Open the sensitivity scan ${job.id.slice(0, 6)}`}
              >
                open
              </a>
            </li>
          );
        })}
      </ul>
    </fieldset>
  );
}

export function ProfilesCompare({
  projectId,
  query,
  onChange,
}: {
  projectId: string;
  query: CompareQuery;
  onChange: (query: CompareQuery) => void;
}) {
  const jobs = useSensitivityJobs(projectId);
  const name = useNames(projectId);
  const items = jobs.data?.items ?? [];
  const selected = query.jobs.length > 0 ? query.jobs : items.slice(0, DEFAULT_SCANS).map((j) => j.id);
  const profiles = useSensitivityProfiles(selected);
  return (
    <section className="panel profiles" aria-labelledby="profiles-heading">
      <h2 id="profiles-heading">Sensitivity profiles</h2>
      <p className="muted small-text">
        Where in the network compression hurts, for several scans on one axis: score per layer against normalised depth,
        and the mean per layer type.
      </p>
      {jobs.isPending ? (
        <Loading what="sensitivity scans" />
      ) : jobs.isError ? (
        <ErrorMessage error={jobs.error} />
      ) : items.length === 0 && selected.length === 0 ? (
        <Empty>No succeeded sensitivity scans yet: launch one from the project page.</Empty>
      ) : (
        <>
          <ScanPicker
            jobs={items}
            selected={selected}
            name={name}
            onChange={(ids) => {
              onChange({ ...query, jobs: ids });
            }}
          />
          {selected.length === 0 ? (
            <Empty>Tick at least one scan.</Empty>
          ) : profiles.isPending ? (
            <Loading what="the profiles" />
          ) : profiles.isError ? (
            <ErrorMessage error={profiles.error} />
          ) : (
            <div className={profiles.isPlaceholderData ? "stale" : undefined}>
              <Charts
                comparison={profiles.data}
                config={query.config}
                onConfig={(config) => {
                  onChange({ ...query, jobs: selected, config });
                }}
              />
            </div>
          )}
        </>
      )}
    </section>
  );
}
