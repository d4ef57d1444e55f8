// The optional parts of a fidelity job's parameters that the launcher offers: a calibration set (the layer
// profile measures how much of the evaluation set falls outside the ranges seen on it) and the robustness
// slices with an out-of-distribution dataset and a PyTorch twin of an ONNX golden model (FGSM / PGD take
// their gradients from the twin). The API refuses a twin that is not a .pt2 / TorchScript model.
import type { Model } from "../api/types";

const ONNX_FORMATS = new Set(["onnx", "onnx_zip"]);
const PYTORCH_FORMATS = new Set(["torch_export", "torchscript"]);

export function isOnnx(model: Model | undefined): boolean {
  return model !== undefined && ONNX_FORMATS.has(model.format);
}

export function isPyTorch(model: Model | undefined): boolean {
  return model !== undefined && PYTORCH_FORMATS.has(model.format);
}

/** The models that can be the twin of `goldenId`: none unless the golden model is ONNX; else the project's
 * PyTorch models (.pt2 or TorchScript) that are not invalid. */
export function eligibleTwins(models: readonly Model[], goldenId: string): Model[] {
  if (!isOnnx(models.find((m) => m.id === goldenId))) return [];
  return models.filter((m) => PYTORCH_FORMATS.has(m.format) && m.status !== "invalid" && m.id !== goldenId);
}

export interface FidelityChoices {
  calibration: string;
  robustness: boolean;
  ood: string;
  twin: string;
  /** The slices and severities chosen (robustnessChoice); absent: every slice at every severity. */
  slices?: { slices: string[]; severities: number[] };
}

/** The parameters these choices add to a fidelity job ("" = not chosen). A twin is sent only while it is
 * eligible for the chosen golden model (picking another golden model drops it). */
export function fidelityOptions(
  choices: FidelityChoices,
  models: readonly Model[],
  goldenId: string,
): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (choices.calibration) body.calibration_dataset_id = choices.calibration;
  if (choices.robustness) {
    const twin = eligibleTwins(models, goldenId).some((m) => m.id === choices.twin) ? choices.twin : "";
    // without a choice, every slice at every severity (the API's defaults)
    body.robustness = {
      ...(choices.slices ?? {}),
      ...(choices.ood ? { ood_dataset_id: choices.ood } : {}),
      ...(twin ? { twin_model_id: twin } : {}),
    };
  }
  return body;
}
