// The task metrics of a run's headline (GET fidelity-runs and trends: `headline.task`), for the compare table's
// columns and the trends' metric choice. Directions come from the API (kneeboard check's rule); labels and
// units from the report's metric cards where one exists.
import type { components } from "../client/schema";
import type { MetricDef } from "./metricDef";
import { TENSOR_TASK_METRICS } from "./taskMetricCards";

type TaskHeadline = components["schemas"]["TaskHeadline"];
interface WithTask {
  headline: { task?: TaskHeadline | null };
}

export interface TaskColumn {
  /** "task.<metric>", the name sweeps, budgets and kneeboard check use. */
  key: string;
  metric: string;
  label: string;
  higherIsBetter: boolean;
  unit: MetricDef["unit"];
}

const DEFS = new Map(TENSOR_TASK_METRICS.map((d) => [d.path, d]));

function humanize(metric: string): string {
  const words = metric.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A run's value of one task metric, or null (another task, undefined, not finite). */
export function taskValue(run: WithTask, metric: string): number | null {
  const found = run.headline.task?.metrics.find((m) => m.metric === metric);
  const value = found?.value;
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** The task metrics with a value in at least one run, in the order the runs' tasks list them. */
export function taskColumns(runs: readonly WithTask[]): TaskColumn[] {
  const columns = new Map<string, TaskColumn>();
  for (const run of runs) {
    for (const m of run.headline.task?.metrics ?? []) {
      if (columns.has(m.metric) || !runs.some((r) => taskValue(r, m.metric) !== null)) continue;
      const key = `task.${m.metric}`;
      const def = DEFS.get(key);
      columns.set(m.metric, {
        key,
        metric: m.metric,
        label: def?.label ?? humanize(m.metric),
        higherIsBetter: m.higher_is_better,
        unit: def?.unit ?? (/agreement|overlap|exact_match|_vs_golden$/.test(m.metric) ? "fraction" : ""),
      });
    }
  }
  return [...columns.values()];
}
