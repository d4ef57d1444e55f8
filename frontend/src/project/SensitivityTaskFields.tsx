// The sensitivity launcher's task (issue 30): the task every cell is also scored on, its options, the task metric
// layers are ranked by (blank: KL / SQNR), and what that costs, shown before launch (lib/sensitivityTask.ts).
// The tasks and their metrics come from SensitivityJobParams' schema (rank_by's x-task-metrics).
import { useMemo } from "react";
import type { JsonObject } from "../lib/json";
import { taskMetricLabel } from "../lib/sensitivityTask";
import { taskMetrics } from "../lib/sweepTask";
import { TaskChoiceFields } from "./TaskChoiceFields";

export interface ScanTaskChoice {
  task: string;
  options: string;
  rankBy: string;
}

export const NO_SCAN_TASK: ScanTaskChoice = { task: "auto", options: "", rankBy: "" };

export function SensitivityTaskFields({
  schema,
  value,
  cost,
  onChange,
}: {
  schema: JsonObject;
  value: ScanTaskChoice;
  cost: string | null;
  onChange: (value: ScanTaskChoice) => void;
}) {
  const metrics = useMemo(() => taskMetrics(schema, "rank_by")[value.task] ?? {}, [schema, value.task]);
  const names = Object.keys(metrics);
  return (
    <fieldset className="fields">
      <legend>Task</legend>
      <TaskChoiceFields
        schema={schema}
        task={value.task}
        options={value.options}
        optionsHelp='Flat, as for a fidelity job, e.g. {"ignore_index": 255} or {"vocabulary": [...]}.'
        onChange={(change) => {
          // a new task has other metrics: the ranking starts over
          onChange(change.task === undefined ? { ...value, ...change } : { ...value, ...change, rankBy: "" });
        }}
      />
      <label>
        Rank by
        <select
          value={names.includes(value.rankBy) ? value.rankBy : ""}
          disabled={names.length === 0}
          onChange={(e) => {
            onChange({ ...value, rankBy: e.target.value });
          }}
        >
          <option value="">KL (classifiers) or SQNR of the primary output</option>
          {names.map((n) => (
            <option key={n} value={n}>
              {taskMetricLabel(n)} ({metrics[n] === "min" ? "largest" : "smallest"} first)
            </option>
          ))}
        </select>
      </label>
      {cost && (
        <p className="muted small-text" role="note">
          {cost}
        </p>
      )}
    </fieldset>
  );
}
