// The sweep launcher's task (issue 30): the task every point is scored on, its options, and the task metric the
// frontier opens with (against size), optionally bounded, e.g. task.miou_drop ≤ 0.005. The tasks, their metrics
// and which way each is better come from SweepJobParams' schema (see lib/sweepTask.ts).
import { useMemo } from "react";
import type { JsonObject } from "../lib/json";
import { objectiveInfo } from "../lib/sweepObjectives";
import { taskMetrics } from "../lib/sweepTask";
import { TextField } from "./fields";
import { TaskChoiceFields } from "./TaskChoiceFields";

export interface TaskChoice {
  task: string;
  options: string;
  metric: string;
  limit: string;
}

export const NO_TASK: TaskChoice = { task: "auto", options: "", metric: "", limit: "" };

export function SweepTaskFields({
  schema,
  value,
  onChange,
}: {
  schema: JsonObject;
  value: TaskChoice;
  onChange: (value: TaskChoice) => void;
}) {
  const metrics = useMemo(() => taskMetrics(schema)[value.task] ?? {}, [schema, value.task]);
  const names = Object.keys(metrics);
  const metric = names.includes(value.metric) ? value.metric : "";
  const better = metric ? metrics[metric] : null;
  return (
    <fieldset className="fields">
      <legend>Task</legend>
      <TaskChoiceFields
        schema={schema}
        task={value.task}
        options={value.options}
        optionsHelp='Flat, as for a fidelity job, e.g. {"ignore_index": 255} or {"vocabulary": [...]}.'
        onChange={(change) => {
          // a new task has other metrics: its frontier axis and bound start over
          onChange(
            change.task === undefined ? { ...value, ...change } : { ...value, ...change, metric: "", limit: "" },
          );
        }}
      />
      <label>
        Frontier axis
        <select
          value={metric}
          disabled={names.length === 0}
          onChange={(e) => {
            onChange({ ...value, metric: e.target.value });
          }}
        >
          <option value="">{names.length ? "The page's default (size × KL)" : "No task metric for this task"}</option>
          {names.map((n) => (
            <option key={n} value={n}>
              {objectiveInfo(n).label} ({metrics[n] === "min" ? "lower" : "higher"} is better)
            </option>
          ))}
        </select>
        <span className="muted small-text">The sweep&apos;s frontier opens with this metric against size.</span>
      </label>
      <TextField
        label={better === "max" ? "At least" : "At most"}
        inputMode="decimal"
        value={value.limit}
        disabled={!metric}
        onChange={(limit) => {
          onChange({ ...value, limit });
        }}
        help="Optional: points beyond it are left off the frontier (e.g. 0.005 for an mIoU drop, a fraction)."
      />
    </fieldset>
  );
}
