import { describe, expect, it } from "vitest";
import type { Model } from "../api/types";
import { eligibleTwins, fidelityOptions, isOnnx } from "./fidelityOptions";

function model(id: string, format: string, status = "ready"): Model {
  return { id, name: `${id}.${format}`, format, status } as Model;
}

const models = [
  model("golden", "onnx"),
  model("zipped", "onnx_zip"),
  model("int8", "onnx"),
  model("program", "torch_export"),
  model("script", "torchscript"),
  model("broken", "torch_export", "invalid"),
  model("pending", "torchscript", "inspecting"),
];

describe("eligibleTwins", () => {
  it("offers the project's valid PyTorch models for an ONNX golden model", () => {
    expect(eligibleTwins(models, "golden").map((m) => m.id)).toEqual(["program", "script", "pending"]);
    expect(eligibleTwins(models, "zipped").map((m) => m.id)).toEqual(["program", "script", "pending"]);
  });

  it("offers none for a PyTorch golden model or none chosen", () => {
    expect(eligibleTwins(models, "program")).toEqual([]);
    expect(eligibleTwins(models, "")).toEqual([]);
    expect(isOnnx(undefined)).toBe(false);
  });
});

describe("fidelityOptions", () => {
  const none = { calibration: "", robustness: false, ood: "", twin: "" };

  it("adds nothing when nothing is chosen", () => {
    expect(fidelityOptions(none, models, "golden")).toEqual({});
  });

  it("sends the calibration set with or without robustness", () => {
    expect(fidelityOptions({ ...none, calibration: "cal" }, models, "golden")).toEqual({
      calibration_dataset_id: "cal",
    });
    expect(fidelityOptions({ ...none, calibration: "cal", robustness: true }, models, "golden")).toEqual({
      calibration_dataset_id: "cal",
      robustness: {},
    });
  });

  it("sends an eligible twin and the OOD set under robustness only", () => {
    const chosen = { ...none, robustness: true, ood: "ood", twin: "program" };
    expect(fidelityOptions(chosen, models, "golden")).toEqual({
      robustness: { ood_dataset_id: "ood", twin_model_id: "program" },
    });
    expect(fidelityOptions({ ...chosen, robustness: false }, models, "golden")).toEqual({});
  });

  it("drops a twin that the golden model no longer takes", () => {
    const chosen = { ...none, robustness: true, twin: "program" };
    expect(fidelityOptions(chosen, models, "program")).toEqual({ robustness: {} });
    expect(fidelityOptions({ ...chosen, twin: "broken" }, models, "golden")).toEqual({ robustness: {} });
    expect(fidelityOptions({ ...chosen, twin: "int8" }, models, "golden")).toEqual({ robustness: {} });
  });
});
