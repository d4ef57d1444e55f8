// What the recovery launch form offers and sends: the golden models recovery runs on, the configurations it
// recovers (the weight-quantization presets of the sweep form), and the request body with the checks the API
// would make. Pure functions (tested in launch.test.ts).
import type { Model } from "../api/types";
import { SWEEP_PRESETS } from "../lib/sweepParams";
import { methodsFor, methodsToLaunch, choiceProblem, type MethodChoice } from "./training";

/** The configurations offered: those that quantize weights, the ones recovery's methods act on. */
export const RECOVERY_PRESET_IDS = ["w4", "w6", "w8", "w8t", "w4a8", "w8a8", "w8a16"] as const;
export const RECOVERY_PRESETS = RECOVERY_PRESET_IDS.flatMap((id) => SWEEP_PRESETS.filter((p) => p.id === id));
export const DEFAULT_RECOVERY_PRESET = "w4";

/** The project's models recovery can start from: torch.export or ONNX, not invalid. */
export const recoverableModels = (models: readonly Model[]): Model[] =>
  models.filter((m) => m.status !== "invalid" && methodsFor(m.format).length > 0);

export interface RecoveryLaunch {
  modelId: string;
  datasetId: string;
  presetId: string;
  /** As typed: the share of samples held out, and the samples used. */
  heldout: string;
  samples: string;
  name: string;
  choice: MethodChoice;
  /** {task, task_options} as the fidelity launcher builds them ({} for none), or why they cannot be sent. */
  task?: Record<string, unknown> | string;
}

const numberIn = (text: string, low: number, high: number, integer: boolean): number | null => {
  if (text.trim() === "") return null;
  const v = Number(text);
  return Number.isFinite(v) && v >= low && v <= high && (!integer || Number.isInteger(v)) ? v : null;
};

/** RecoveryJobParams for this launch, or why it cannot be sent (in words, before the API is asked). */
export function recoveryParams(launch: RecoveryLaunch): Record<string, unknown> | string {
  if (!launch.modelId) return "choose the golden model to recover";
  if (!launch.datasetId) return "choose the dataset to calibrate on and measure with";
  const preset = RECOVERY_PRESETS.find((p) => p.id === launch.presetId);
  if (!preset) return "choose the configuration to recover";
  const heldout = numberIn(launch.heldout, 0.05, 0.9, false);
  if (heldout === null) return "held-out share: a number from 0.05 to 0.9";
  const samples = numberIn(launch.samples, 4, 100_000, true);
  if (samples === null) return "samples: a whole number from 4 to 100000";
  const problem = choiceProblem(launch.choice);
  if (problem) return problem;
  if (typeof launch.task === "string") return launch.task;
  const name = launch.name.trim();
  return {
    golden_model_id: launch.modelId,
    dataset_id: launch.datasetId,
    config: structuredClone(preset.config),
    heldout_fraction: heldout,
    max_samples: samples,
    methods: methodsToLaunch(launch.choice),
    ...launch.task,
    ...(name ? { name: name.slice(0, 200) } : {}),
  };
}
