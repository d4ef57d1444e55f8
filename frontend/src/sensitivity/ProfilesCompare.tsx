// The compare page's sensitivity section: overlaid profiles of several sensitivity scans (e.g. a CNN, a
// transformer and an LSTM) on a normalised depth axis for one configuration they all have, and the mean
// score per layer type. The scans and the configuration are in the URL.
import { useMemo } from "react";
import { useSensitivityJobs, useSensitivityProfiles } from "../api/sensitivity";
import type { SensitivityComparison } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { CompareSection, JobPicker } from "../components/CompareSection";
import { Plot } from "../components/Plot";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
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
    <CompareSection
      className="profiles"
      headingId="profiles-heading"
      title="Sensitivity profiles"
      intro="Where in the network compression hurts, for several scans on one axis: score per layer against normalised depth, and the mean per layer type."
      jobs={jobs}
      what="sensitivity scans"
      none="No succeeded sensitivity scans yet: launch one from the project page."
      available={items.length}
      selected={selected.length}
      tickOne="Tick at least one scan."
      picker={
        <JobPicker
          legend="Scans to overlay"
          jobs={items}
          selected={selected}
          name={name}
          max={MAX_SCANS}
          open={(job) => ({
            href: href({ page: "sensitivity", jobId: job.id, query: DEFAULT_SENSITIVITY_QUERY }),
            label: `Open the sensitivity scan ${job.id.slice(0, 6)}`,
          })}
          onChange={(ids) => {
            onChange({ ...query, jobs: ids });
          }}
        />
      }
    >
      {() =>
        profiles.isPending ? (
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
        )
      }
    </CompareSection>
  );
}
