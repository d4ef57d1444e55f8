// A fidelity job's task (issues 30 and 31): the task, its flat options, and for a language model the embedding
// model that scores the two generations' meaning (`similarity_model_id`, one of the project's models zipped
// with its tokenizer.json). The API checks the rest at launch and answers in words.
import type { components } from "../client/schema";
import { isObject } from "../lib/json";
import { parseTaskOptions } from "../lib/sweepTask";

type Model = components["schemas"]["ModelOut"];

export interface FidelityTaskChoice {
  task: string;
  options: string;
  similarityModel: string;
}

export const NO_FIDELITY_TASK: FidelityTaskChoice = { task: "auto", options: "", similarityModel: "" };

/** The models that can embed text: a zip whose inspection found a readable tokenizer.json. */
export function embeddingModels(models: Model[]): Model[] {
  return models.filter((m) => {
    const tokenizer = m.inspection?.tokenizer;
    return m.status !== "invalid" && isObject(tokenizer) && typeof tokenizer.member === "string";
  });
}

/** {task, task_options} for the request body ({} for "auto"), else why not. */
export function fidelityTask(choice: FidelityTaskChoice): Record<string, unknown> | string {
  if (choice.task === "auto") return {};
  const options = parseTaskOptions(choice.options);
  if (typeof options === "string") return options;
  const taskOptions: Record<string, unknown> = { ...options };
  if (choice.task === "language_model" && choice.similarityModel) {
    taskOptions.similarity_model_id = choice.similarityModel;
  }
  return { task: choice.task, task_options: taskOptions };
}
