// The task select and its flat options (JSON), shared by the fidelity, sweep and recovery launchers. The tasks
// come from SweepJobParams' schema (the API's one list of task names, which every job kind takes). The task's
// description stays out of the label (aria-describedby): the select's accessible name is "Task" alone, so a
// form's other selects ("Golden model"...) are never found by words of the description.
import { useId, useMemo } from "react";
import type { JsonObject } from "../lib/json";
import { sweepTasks } from "../lib/sweepTask";
import { TextField, describeParam } from "./fields";

export function TaskChoiceFields({
  schema,
  task,
  options,
  optionsHelp,
  onChange,
}: {
  schema: JsonObject;
  task: string;
  options: string;
  optionsHelp: string;
  onChange: (change: { task?: string; options?: string }) => void;
}) {
  const tasks = useMemo(() => sweepTasks(schema), [schema]);
  const hintId = useId();
  return (
    <>
      <label>
        Task
        <select
          value={task}
          aria-describedby={hintId}
          onChange={(e) => {
            onChange({ task: e.target.value });
          }}
        >
          {tasks.map((t) => (
            <option key={t} value={t}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <p id={hintId} className="muted small-text">
        {describeParam(schema, "task")}
      </p>
      <TextField
        label="Task options (JSON)"
        inputMode="text"
        value={options}
        disabled={task === "auto"}
        onChange={(text) => {
          onChange({ options: text });
        }}
        help={optionsHelp}
      />
    </>
  );
}
