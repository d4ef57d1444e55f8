// Calibration kept apart (issue 33): a sweep whose configurations quantize activations calibrates them on a
// named calibration set, or on the evaluation dataset's first samples held out (min(128, N / 4) by default),
// never on the samples it evaluates. Mirrors backend/calibration_split.py for what the launcher shows.
import { isObject } from "./json";

export const DEFAULT_HELD_OUT = 128;
export const HELD_OUT_SHARE = 4;
export const DEFAULT_NAMED = 256;

/** Whether a configuration (its JSON: a "type" tag and fields) quantizes any activation, or ranks channels on
 * samples (channel_prune by taylor / reconstruction importance): both calibrate. */
export function quantizesActivations(config: unknown): boolean {
  if (!isObject(config)) return false;
  if (config.type === "activation_quant") return true;
  if (config.type === "channel_prune") return config.norm === "taylor" || config.norm === "reconstruction";
  if (config.type === "quantize") return config.activations !== null && config.activations !== undefined;
  if (config.type === "schedule" && Array.isArray(config.stages)) return config.stages.some(quantizesActivations);
  return false;
}

/** How many samples calibrate and which are evaluated, in words, for the launcher (null: nothing is). */
export function calibrationSentence(
  needed: boolean,
  evaluationSamples: number | null,
  maxSamples: number | null,
  calibrationSet: { name: string; n_samples: number } | null,
  requested: number | null,
): string | null {
  if (!needed) return null;
  if (calibrationSet) {
    const count = requested ?? Math.min(DEFAULT_NAMED, calibrationSet.n_samples);
    return `The first ${count.toLocaleString("en-US")} samples of ${calibrationSet.name} calibrate the activation ranges.`;
  }
  if (evaluationSamples === null) return "The evaluation dataset's first samples will be held out to calibrate.";
  const held = requested ?? Math.min(DEFAULT_HELD_OUT, Math.floor(evaluationSamples / HELD_OUT_SHARE));
  if (held < 1 || held >= evaluationSamples)
    return `The dataset has ${evaluationSamples.toLocaleString("en-US")} samples: too few to hold out calibration samples; choose a calibration set.`;
  const first = `Samples 0–${(held - 1).toLocaleString("en-US")} calibrate the activation ranges and are not evaluated`;
  if (maxSamples === null) return `${first}; the samples after them are evaluated (at most the evaluation samples).`;
  const evaluated = Math.min(evaluationSamples - held, maxSamples);
  return `${first}; the next ${evaluated.toLocaleString("en-US")} are evaluated.`;
}

/** The calibration set a request names: the chosen one, when something is calibrated and it is not the
 * evaluation dataset (the API would refuse both). */
export function chosenCalibrationSet<D extends { id: string }>(
  datasets: readonly D[],
  evaluation: string,
  chosen: string,
  calibrates: boolean,
): D | null {
  return calibrates ? (datasets.find((d) => d.id === chosen && d.id !== evaluation) ?? null) : null;
}
