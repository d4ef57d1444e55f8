// A sensitivity scan scored on a task (issue 30): its task matrices (matrix.task_metrics: metric → layers ×
// configurations), the layers ranked by one of them and the heatmap figure. The better way of each metric is
// the report cards' (lib/taskMetricCards.ts: a _drop / _delta is lower-is-better, an agreement higher); a
// ranking puts the worst first: the largest drop, the smallest agreement. The metric the scan was ranked by
// (rank_by) keeps the API's order, as the engine ranked it.
import type { Data, Layout } from "plotly.js";
import type { SensitivityReport } from "../api/types";
import type { Cell } from "./csv";
import { escapeHtml, finite, type Grid } from "./sensitivity";
import { COLORSCALE } from "./sensitivityHeatmap";
import { rankLayers } from "./sensitivityRanking";
import { taskMetricLabel } from "./sensitivityTask";
import { objectiveInfo } from "./sweepObjectives";
import { TENSOR_TASK_METRICS } from "./taskMetricCards";

const matrices = (report: SensitivityReport): Record<string, Grid> => report.matrix.task_metrics ?? {};

/** The task metrics the scan's cells carry (empty for a scan without a task), the ranked one first. */
export function taskMetricNames(report: SensitivityReport): string[] {
  const names = Object.keys(matrices(report));
  const ranked = report.rank_by;
  return ranked && names.includes(ranked) ? [ranked, ...names.filter((n) => n !== ranked)] : names;
}

/** Whether a larger value of the metric is worse (a drop, a delta, an error rate). */
export function largerIsWorse(name: string): boolean {
  const path = `task.${name}`;
  const card = TENSOR_TASK_METRICS.find((d) => d.path === path);
  if (card?.direction) return card.direction !== "higher";
  return objectiveInfo(path).direction === "min";
}

/** The metric's grid, signed so that higher = more sensitive. */
export function taskScores(report: SensitivityReport, name: string): Grid {
  const grid = matrices(report)[name] ?? [];
  const sign = largerIsWorse(name) ? 1 : -1;
  return grid.map((row) => row.map((v) => (finite(v) ? sign * v : null)));
}

export interface TaskRankedLayer {
  rank: number;
  name: string;
  /** The metric's mean over the configurations (or the one configuration's value), as measured. */
  value: number | null;
}

/** Layers most sensitive to the task first (the all-but view: keeping the layer in float helping most). */
export function taskRanking(report: SensitivityReport, name: string, config: string | null): TaskRankedLayer[] {
  const { rows, columns } = report.matrix;
  const fromApi = config === null ? report.ranking.overall : report.ranking.by_config[config];
  const apiOrder = name === report.rank_by && fromApi?.length === rows.length && rows.every((r) => fromApi.includes(r));
  const order = apiOrder
    ? fromApi
    : rankLayers(rows, columns, taskScores(report, name), config, report.mode === "all_but");
  const grid = matrices(report)[name] ?? [];
  const column = config === null ? -1 : columns.indexOf(config);
  return order.map((layer, rank) => {
    const values = grid[rows.indexOf(layer)] ?? [];
    const picked = (column >= 0 ? [values[column]] : values).filter((v): v is number => finite(v));
    return {
      rank: rank + 1,
      name: layer,
      value: picked.length ? picked.reduce((a, b) => a + b, 0) / picked.length : null,
    };
  });
}

/** The metric as a heatmap: darker = more sensitive whichever way the metric runs. */
export function taskHeatmapFigure(
  report: SensitivityReport,
  name: string,
): { data: Data[]; layout: Partial<Layout>; height: number } {
  const { rows, columns } = report.matrix;
  const grid = matrices(report)[name] ?? [];
  const label = taskMetricLabel(name);
  const text = rows.map((row, i) =>
    columns.map((column, j) => {
      const v = grid[i]?.[j];
      return `${escapeHtml(row)}<br>${escapeHtml(column)}<br>${escapeHtml(label)}: ${finite(v) ? Number(v.toPrecision(4)).toString() : "not measured"}`;
    }),
  );
  const height = Math.max(200, 60 + rows.length * 22);
  return {
    data: [
      {
        type: "heatmap",
        x: columns,
        y: rows,
        z: taskScores(report, name).map((row) => row.map((v) => v ?? null)),
        text: text as unknown as string[], // a grid, as the KL heatmap's
        hovertemplate: "%{text}<extra></extra>",
        colorscale: COLORSCALE,
        showscale: true,
        colorbar: { title: { text: largerIsWorse(name) ? label : `−${label}` } },
      },
    ],
    layout: {
      margin: { l: 160, r: 20, t: 10, b: 60 },
      yaxis: { autorange: "reversed", automargin: true },
      xaxis: { side: "top" },
    },
    height,
  };
}

/** The task matrices in long form (one line per cell and metric). */
export function taskMatrixCsv(report: SensitivityReport): { header: string[]; rows: Cell[][] } {
  const { rows, columns } = report.matrix;
  const out: Cell[][] = [];
  for (const name of taskMetricNames(report)) {
    const grid = matrices(report)[name] ?? [];
    rows.forEach((layer, i) => {
      columns.forEach((column, j) => {
        out.push([report.mode, layer, column, name, grid[i]?.[j] ?? null]);
      });
    });
  }
  return { header: ["mode", "layer", "config", "metric", "value"], rows: out };
}
