// A live loss curve while a distill / qat step trains: the job's progress message carries the step, its loss
// and the held-out KL (measured at this step, or the last measurement with its step; worker/engine/recovery/
// runner.py _train). Each poll's message becomes a sample; the samples become LossCurves for LossCurveChart.
// A sampled curve (one point per poll), not every step: the whole curve is stored when the job ends.
// Pure functions (tested in liveCurve.test.ts).
import type { LossCurve } from "./training";

export interface ProgressSample {
  method: string;
  step: number;
  total: number;
  loss: number | null;
  /** The latest held-out KL and the step it was measured at (null before the first check). */
  kl: number | null;
  klStep: number | null;
}

const NUMBER = String.raw`[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf)`;
const MESSAGE = new RegExp(
  String.raw`^(distill|qat) step (\d+)/(\d+): loss (${NUMBER})` +
    String.raw`(?:, held-out KL (${NUMBER})| \(held-out KL (${NUMBER}) at step (\d+)\))?$`,
  "i",
);

const finite = (text: string | undefined): number | null => {
  const v = text === undefined ? Number.NaN : Number(text);
  return Number.isFinite(v) ? v : null;
};

/** The training sample a progress message describes, or null for any other message. */
export function parseProgress(message: string | null | undefined): ProgressSample | null {
  const m = MESSAGE.exec(message ?? "");
  if (!m) return null;
  const [, method = "", step = "", total = "", loss, klHere, klBefore, klAt] = m;
  const here = klHere !== undefined;
  return {
    method,
    step: Number(step),
    total: Number(total),
    loss: finite(loss),
    kl: here ? finite(klHere) : finite(klBefore),
    klStep: here ? Number(step) : klAt !== undefined ? Number(klAt) : null,
  };
}

/** `samples` with `sample` added (the same array when it is null or a step already seen). */
export function addSample(
  samples: readonly ProgressSample[],
  sample: ProgressSample | null,
): readonly ProgressSample[] {
  if (sample === null || samples.some((s) => s.method === sample.method && s.step === sample.step)) return samples;
  return [...samples, sample];
}

/** One curve per method, in the order they trained: the sampled steps' losses and every KL measurement seen. */
export function liveCurves(samples: readonly ProgressSample[]): LossCurve[] {
  const methods = [...new Set(samples.map((s) => s.method))];
  return methods.map((method) => {
    const own = samples.filter((s) => s.method === method).sort((a, b) => a.step - b.step);
    const kl = new Map<number, number>();
    for (const s of own) if (s.klStep !== null && s.kl !== null) kl.set(s.klStep, s.kl);
    const klSteps = [...kl.keys()].sort((a, b) => a - b);
    return {
      method,
      steps: own.map((s) => s.step),
      loss: own.map((s) => s.loss),
      klSteps,
      kl: klSteps.map((step) => kl.get(step) ?? 0),
      bestStep: null,
      stoppedEarly: false,
    };
  });
}
