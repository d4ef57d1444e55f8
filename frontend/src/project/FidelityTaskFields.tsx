// The fidelity launcher's task (issues 30 and 31): the task the job scores, its options as flat JSON, and for
// a language model the project model whose embeddings compare the two generations (semantic similarity).
import { useId, useMemo } from "react";
import type { components } from "../client/schema";
import type { JsonObject } from "../lib/json";
import { sweepTasks } from "../lib/sweepTask";
import { TextField, describeParam } from "./fields";
import { embeddingModels, type FidelityTaskChoice } from "./fidelityTask";

type Model = components["schemas"]["ModelOut"];

export function FidelityTaskFields({
  schema,
  models,
  value,
  onChange,
}: {
  schema: JsonObject;
  models: Model[];
  value: FidelityTaskChoice;
  onChange: (value: FidelityTaskChoice) => void;
}) {
  const tasks = useMemo(() => sweepTasks(schema), [schema]);
  const embedders = embeddingModels(models);
  const hintId = useId();
  return (
    <fieldset className="fields">
      <legend>Task</legend>
      {/* The description stays out of the label: it names "the golden model", and the select's accessible
          name must be "Task" alone (the form's "Golden model" select is found by its label). */}
      <label>
        Task
        <select
          value={value.task}
          aria-describedby={hintId}
          onChange={(e) => {
            onChange({ ...value, task: e.target.value });
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
        value={value.options}
        disabled={value.task === "auto"}
        onChange={(options) => {
          onChange({ ...value, options });
        }}
        help='Flat, e.g. {"generate_tokens": 32, "context_tokens": 512} for a language model on a .jsonl of prompts.'
      />
      {value.task === "language_model" && (
        <label>
          Semantic similarity model (optional)
          <select
            value={value.similarityModel}
            onChange={(e) => {
              onChange({ ...value, similarityModel: e.target.value });
            }}
          >
            <option value="">None</option>
            {embedders.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
          <span className="muted small-text">
            {embedders.length
              ? "Embeds both generations (mean pooling, cosine); needs generate_tokens in the options."
              : "Upload a sentence-embedding model (e.g. MiniLM) zipped with its tokenizer.json to offer one."}
          </span>
        </label>
      )}
    </fieldset>
  );
}
