import { describe, expect, it } from "vitest";
import type { components } from "../client/schema";
import { embeddingModels, fidelityTask, NO_FIDELITY_TASK } from "./fidelityTask";

type Model = components["schemas"]["ModelOut"];

describe("fidelityTask", () => {
  it("adds the semantic similarity model to a language model's options, and nothing for auto", () => {
    expect(fidelityTask(NO_FIDELITY_TASK)).toEqual({});
    const choice = { task: "language_model", options: '{"generate_tokens": 8}', similarityModel: "m1" };
    expect(fidelityTask(choice)).toEqual({
      task: "language_model",
      task_options: { generate_tokens: 8, similarity_model_id: "m1" },
    });
    expect(fidelityTask({ ...choice, task: "ctc", options: "" })).toEqual({ task: "ctc", task_options: {} });
    expect(fidelityTask({ ...choice, options: "[1]" })).toMatch(/must be a JSON object/);
  });

  it("offers as embedding models only those whose zip carries a readable tokenizer.json", () => {
    const model = (id: string, inspection: Model["inspection"], status = "ready") =>
      ({ id, name: id, status, inspection }) as unknown as Model;
    const models = [
      model("minilm", { tokenizer: { member: "tokenizer.json", vocab_size: 30522, error: null } }),
      model("plain", { outputs: [] }),
      model("broken", { tokenizer: { member: null, vocab_size: null, error: "unreadable" } }),
      model("invalid", { tokenizer: { member: "tokenizer.json" } }, "invalid"),
    ];
    expect(embeddingModels(models).map((m) => m.id)).toEqual(["minilm"]);
  });
});
