// The method choice of a recovery launch and the loss curves of its training steps (distill, qat). Pure
// functions over the API's typed documents (tested in training.test.ts).
import type { RecoverySummary } from "./recovery";

export type MethodName = "equalization" | "smoothquant" | "adaround" | "distill" | "qat" | "bias_correction";

/** The order chosen methods run in: equalization and SmoothQuant must come first (they rescale weights);
 * AdaRound picks the rounding QAT then trains from; bias correction last, measured on the final weights. */
export const METHOD_ORDER: readonly MethodName[] = [
  "equalization",
  "smoothquant",
  "adaround",
  "distill",
  "qat",
  "bias_correction",
];

export const METHOD_LABELS: Record<MethodName, string> = {
  equalization: "Cross-layer equalization",
  smoothquant: "SmoothQuant scale migration",
  adaround: "AdaRound",
  distill: "Distillation fine-tuning",
  qat: "Quantization-aware training",
  bias_correction: "Bias correction",
};

export const TRAINING_METHODS: ReadonlySet<MethodName> = new Set(["distill", "qat"]);

/** The training parameters the launch form offers (the API's defaults; the rest keep theirs). */
export interface TrainingChoice {
  steps: number;
  learning_rate: number;
  temperature: number;
  alpha: number;
  patience: number;
}

export const DEFAULT_TRAINING: TrainingChoice = {
  steps: 300,
  learning_rate: 1e-3,
  temperature: 2,
  alpha: 0,
  patience: 5,
};

/** AdaRound's settings the launch form offers (the API's defaults; β's schedule and warm-up keep theirs). */
export interface AdaRoundChoice {
  iterations: number;
  batch_size: number;
  learning_rate: number;
  reg_weight: number;
  max_samples: number;
}

export const DEFAULT_ADAROUND: AdaRoundChoice = {
  iterations: 1200,
  batch_size: 64,
  learning_rate: 1e-2,
  reg_weight: 0.01,
  max_samples: 512,
};

export interface MethodChoice {
  chosen: ReadonlySet<MethodName>;
  training: TrainingChoice;
  adaround: AdaRoundChoice;
  /** SmoothQuant's migration strength α (0: activations kept, 1: their whole range moved into the weights). */
  smoothAlpha: number;
}

export const DEFAULT_CHOICE: MethodChoice = {
  chosen: new Set<MethodName>(["equalization", "adaround", "bias_correction"]),
  training: DEFAULT_TRAINING,
  adaround: DEFAULT_ADAROUND,
  smoothAlpha: 0.5,
};

/** What recovery runs on an ONNX golden model: the training-free methods (distillation and QAT train a torch
 * module). */
export const ONNX_METHODS: ReadonlySet<MethodName> = new Set([
  "equalization",
  "smoothquant",
  "adaround",
  "bias_correction",
]);

/** The methods a golden model of this format can be recovered with, in METHOD_ORDER; none for TorchScript. */
export function methodsFor(format: string | undefined): readonly MethodName[] {
  if (format === "torch_export") return METHOD_ORDER;
  if (format === "onnx" || format === "onnx_zip") return METHOD_ORDER.filter((m) => ONNX_METHODS.has(m));
  return [];
}

/** The launch form's starting choice for a golden model of this format: the default methods it can run. */
export function defaultChoice(format: string | undefined): MethodChoice {
  const available = new Set(methodsFor(format));
  return { ...DEFAULT_CHOICE, chosen: new Set([...DEFAULT_CHOICE.chosen].filter((m) => available.has(m))) };
}

export type LaunchMethod = { name: MethodName } & Partial<TrainingChoice> & Partial<AdaRoundChoice>;

/** The request's method list: the chosen methods in METHOD_ORDER, the training ones with their parameters,
 * SmoothQuant with its α, AdaRound with its settings. */
export function methodsToLaunch(choice: MethodChoice): LaunchMethod[] {
  return METHOD_ORDER.filter((m) => choice.chosen.has(m)).map((name) =>
    TRAINING_METHODS.has(name)
      ? { name, ...choice.training }
      : name === "smoothquant"
        ? { name, alpha: choice.smoothAlpha }
        : name === "adaround"
          ? { name, ...choice.adaround }
          : { name },
  );
}

/** Why the choice cannot be launched (no method, or a parameter out of the API's ranges), or null. */
export function choiceProblem(choice: MethodChoice): string | null {
  if (choice.chosen.size === 0) return "choose at least one method";
  if (choice.chosen.has("smoothquant") && !(choice.smoothAlpha >= 0 && choice.smoothAlpha <= 1))
    return "SmoothQuant α: from 0 to 1";
  if (choice.chosen.has("adaround")) {
    const problem = adaroundProblem(choice.adaround);
    if (problem) return problem;
  }
  return [...choice.chosen].some((m) => TRAINING_METHODS.has(m)) ? trainingProblem(choice.training) : null;
}

const wholeIn = (v: number, low: number, high: number) => Number.isInteger(v) && v >= low && v <= high;

/** Why AdaRound's settings cannot be sent (the API's ranges), or null. */
export function adaroundProblem(a: AdaRoundChoice): string | null {
  if (!wholeIn(a.iterations, 1, 100_000)) return "AdaRound iterations: a whole number from 1 to 100000";
  if (!wholeIn(a.batch_size, 1, 65_536)) return "AdaRound batch size: a whole number from 1 to 65536";
  if (!(a.learning_rate > 0 && a.learning_rate <= 1)) return "AdaRound learning rate: above 0, at most 1";
  if (!(a.reg_weight >= 0 && a.reg_weight <= 100)) return "AdaRound rounding regulariser λ: from 0 to 100";
  if (!wholeIn(a.max_samples, 1, 1_000_000)) return "AdaRound samples per layer: a whole number from 1";
  return null;
}

/** Why the training parameters cannot be sent (the API's ranges), or null. */
export function trainingProblem(t: TrainingChoice): string | null {
  if (!Number.isInteger(t.steps) || t.steps < 1 || t.steps > 1_000_000) return "steps: a whole number from 1";
  if (!(t.learning_rate > 0 && t.learning_rate <= 1)) return "learning rate: above 0, at most 1";
  if (!(t.temperature >= 0.1 && t.temperature <= 100)) return "temperature: from 0.1 to 100";
  if (!(t.alpha >= 0 && t.alpha <= 1)) return "alpha: from 0 to 1";
  if (!Number.isInteger(t.patience) || t.patience < 0) return "patience: a whole number, 0 for none";
  return null;
}

export interface LossCurve {
  method: string;
  steps: number[];
  loss: (number | null)[];
  /** The held-out KL where it was measured (every eval_every steps). */
  klSteps: number[];
  kl: number[];
  bestStep: number | null;
  stoppedEarly: boolean;
}

/** One curve per training step of the result (none when no distill/qat ran). */
export function lossCurves(summary: RecoverySummary): LossCurve[] {
  return summary.steps.flatMap((step) => {
    const curve = step.details.curve;
    if (!curve || curve.length === 0) return [];
    const measured = curve.filter((p) => p.heldout_kl !== null);
    return [
      {
        method: step.method,
        steps: curve.map((p) => p.step),
        loss: curve.map((p) => p.loss),
        klSteps: measured.map((p) => p.step),
        kl: measured.map((p) => p.heldout_kl ?? 0),
        bestStep: step.details.best_step ?? null,
        stoppedEarly: step.details.stopped_early ?? false,
      },
    ];
  });
}
