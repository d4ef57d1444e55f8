// The fidelity launcher's task (issues 30 and 31): the task the job scores, its options as flat JSON, and for
// a language model the project model whose embeddings compare the two generations (semantic similarity).
import type { components } from "../client/schema";
import type { JsonObject } from "../lib/json";
import { TaskChoiceFields } from "./TaskChoiceFields";
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
  const embedders = embeddingModels(models);
  return (
    <fieldset className="fields">
      <legend>Task</legend>
      <TaskChoiceFields
        schema={schema}
        task={value.task}
        options={value.options}
        optionsHelp='Flat, e.g. {"generate_tokens": 32, "context_tokens": 512} for a language model on a .jsonl of prompts.'
        onChange={(change) => {
          onChange({ ...value, ...change });
        }}
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
