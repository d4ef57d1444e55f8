import { describe, expect, it } from "vitest";
import type { Model } from "../api/types";
import spec from "../../openapi.json";
import {
  DEFAULT_RECOVERY_PRESET,
  RECOVERY_PRESETS,
  recoverableModels,
  recoveryParams,
  type RecoveryLaunch,
} from "./launch";
import { fidelityTask, NO_FIDELITY_TASK } from "../project/fidelityTask";
import { DEFAULT_ADAROUND, DEFAULT_CHOICE, type MethodName } from "./training";

const launch: RecoveryLaunch = {
  modelId: "m1",
  datasetId: "d1",
  presetId: DEFAULT_RECOVERY_PRESET,
  heldout: "0.3",
  samples: "2048",
  name: "",
  choice: { ...DEFAULT_CHOICE, chosen: new Set<MethodName>(["adaround", "bias_correction"]) },
};

describe("recoveryParams", () => {
  it("sends the model, dataset, the preset's configuration and the methods with their settings", () => {
    const params = recoveryParams({
      ...launch,
      name: " mine ",
      choice: { ...launch.choice, adaround: { ...DEFAULT_ADAROUND, iterations: 40 } },
    });
    expect(params).toEqual({
      golden_model_id: "m1",
      dataset_id: "d1",
      config: { type: "weight_quant", bits: 4, per_channel: true },
      heldout_fraction: 0.3,
      max_samples: 2048,
      methods: [{ name: "adaround", ...DEFAULT_ADAROUND, iterations: 40 }, { name: "bias_correction" }],
      name: "mine",
    });
  });

  it("adds the task scored before and after recovery, or says why its options cannot be sent", () => {
    const task = fidelityTask({ task: "segmentation", options: '{"ignore_index": 255}', similarityModel: "" });
    expect(recoveryParams({ ...launch, task })).toMatchObject({
      task: "segmentation",
      task_options: { ignore_index: 255 },
    });
    expect(recoveryParams({ ...launch, task: fidelityTask({ ...NO_FIDELITY_TASK }) })).not.toHaveProperty("task");
    const bad = fidelityTask({ task: "segmentation", options: "[1]", similarityModel: "" });
    expect(recoveryParams({ ...launch, task: bad })).toMatch(/Task options must be a JSON object/);
  });

  it("says in words what is missing or out of the API's range", () => {
    expect(recoveryParams({ ...launch, modelId: "" })).toMatch(/golden model/);
    expect(recoveryParams({ ...launch, datasetId: "" })).toMatch(/dataset/);
    expect(recoveryParams({ ...launch, presetId: "fp16" })).toMatch(/configuration/);
    expect(recoveryParams({ ...launch, heldout: "0.95" })).toMatch(/held-out share/);
    expect(recoveryParams({ ...launch, heldout: "" })).toMatch(/held-out share/);
    expect(recoveryParams({ ...launch, samples: "3" })).toMatch(/samples/);
    expect(recoveryParams({ ...launch, samples: "10.5" })).toMatch(/samples/);
    expect(recoveryParams({ ...launch, choice: { ...launch.choice, chosen: new Set() } })).toMatch(/at least one/);
  });
});

describe("the launch form's lists", () => {
  it("offers only models recovery runs on", () => {
    const model = (id: string, format: string, status = "ready") => ({ id, format, status }) as unknown as Model;
    const models = [
      model("pt2", "torch_export"),
      model("onnx", "onnx"),
      model("zip", "onnx_zip"),
      model("ts", "torchscript"),
      model("bad", "onnx", "invalid"),
    ];
    expect(recoverableModels(models).map((m) => m.id)).toEqual(["pt2", "onnx", "zip"]);
  });

  it("offers configurations that quantize weights, each one the API accepts", () => {
    expect(RECOVERY_PRESETS.map((p) => p.id)).toContain(DEFAULT_RECOVERY_PRESET);
    // every preset's type is one of CompressionConfigIn's (the API's spec), and each quantizes weights
    const types = Object.values(
      (spec as unknown as { components: { schemas: Record<string, { properties?: { type?: { const?: string } } }> } })
        .components.schemas,
    ).flatMap((s) => (s.properties?.type?.const ? [s.properties.type.const] : []));
    for (const preset of RECOVERY_PRESETS) {
      expect(types).toContain(preset.config.type);
      const weights = preset.config.type === "quantize" ? preset.config.weights : preset.config;
      expect(weights).toMatchObject({ type: "weight_quant" });
    }
  });
});
