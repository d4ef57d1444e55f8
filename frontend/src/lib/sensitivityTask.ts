// A sensitivity scan scored on a task (issue 30): the words for a task metric, the model's layer count its
// inspection recorded, and what scoring every cell on the task costs before launch. A task cell runs the whole
// compressed model over the measured samples (worker/engine/sensitivity/task_cells.py), where a KL / SQNR cell
// of an ONNX model re-runs only the graph below its layer from the golden prefix.
import type { Model } from "../api/types";
import { isObject } from "./json";
import { objectiveInfo } from "./sweepObjectives";
import { TENSOR_TASK_METRICS } from "./taskMetricCards";

/** "task.map50_drop" → "mAP@.5 drop" (the report's card label), else the sweep's generic label. */
export function taskMetricLabel(name: string): string {
  const path = name.startsWith("task.") ? name : `task.${name}`;
  return TENSOR_TASK_METRICS.find((d) => d.path === path)?.label ?? objectiveInfo(path).label;
}

/** The parameter-owning layers the model's inspection found (the scan's rows, about), or null before it. */
export function inspectedLayerCount(model: Model | undefined): number | null {
  const layers = model?.inspection?.layers;
  return Array.isArray(layers) && layers.every(isObject) ? layers.length : null;
}

export interface TaskScanShape {
  task: string;
  rankBy: string;
  layers: number | null;
  configs: number;
  samples: number | null;
  allBut: boolean;
}

const plural = (n: number, word: string, many = `${word}s`): string =>
  `${n.toLocaleString("en")} ${n === 1 ? word : many}`;

/** What a scan scored on a task costs, in whole-model forward passes; null when it has no task. */
export function taskScanCost(shape: TaskScanShape): string | null {
  const { task, rankBy, layers, configs, samples, allBut } = shape;
  if (task === "auto" && !rankBy) return null;
  const what = rankBy ? `Ranking by ${taskMetricLabel(rankBy)}` : `Scoring every cell on task '${task}'`;
  const views = allBut ? 2 : 1;
  const of = samples === null ? "the measured samples" : plural(samples, "sample");
  if (layers === null) {
    return (
      `${what} runs the whole model for each layer × ${plural(configs, "configuration")}` +
      `${allBut ? " (twice: the all-but view too)" : ""}, one forward pass of ${of} per cell, instead of ` +
      "reusing the golden prefix; the model's layer count is known once its inspection has finished."
    );
  }
  const cells = layers * configs * views;
  return (
    `${what} runs the whole model for each of ${plural(cells, "cell")} (${plural(layers, "layer")} × ` +
    `${plural(configs, "configuration")}${allBut ? " × 2 views" : ""}): ≈ ${plural(cells, "forward pass", "forward passes")} ` +
    `of ${of}, instead of reusing the golden prefix.`
  );
}
