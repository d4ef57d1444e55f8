import { describe, expect, it } from "vitest";
import { addSample, liveCurves, parseProgress, type ProgressSample } from "./liveCurve";

describe("parseProgress", () => {
  it("reads the runner's three message forms and nothing else", () => {
    // worker/engine/recovery/runner.py _train: before the first check, at a check, after it
    expect(parseProgress("qat step 1/300: loss 0.51234")).toEqual({
      method: "qat",
      step: 1,
      total: 300,
      loss: 0.51234,
      kl: null,
      klStep: null,
    });
    expect(parseProgress("qat step 40/300: loss 0.0123, held-out KL 0.0045")).toMatchObject({
      step: 40,
      loss: 0.0123,
      kl: 0.0045,
      klStep: 40,
    });
    expect(parseProgress("distill step 41/300: loss 1.2e-05 (held-out KL 4.5e-03 at step 40)")).toMatchObject({
      method: "distill",
      step: 41,
      loss: 1.2e-5,
      kl: 0.0045,
      klStep: 40,
    });
    expect(parseProgress("qat step 2/3: loss nan")).toMatchObject({ loss: null });
    expect(parseProgress("qat: measuring on the held-out split")).toBeNull();
    expect(parseProgress("adaround: layer conv1 (1/3)")).toBeNull();
    expect(parseProgress(null)).toBeNull();
  });
});

describe("liveCurves", () => {
  it("keeps one sample per step and every KL measurement, per method in training order", () => {
    const messages = [
      "qat step 3/100: loss 0.5",
      "qat step 3/100: loss 0.5", // the same poll answer twice
      "qat step 21/100: loss 0.2 (held-out KL 0.03 at step 20)",
      "qat step 40/100: loss 0.1, held-out KL 0.02",
      "qat step 44/100: loss 0.12 (held-out KL 0.02 at step 40)",
      "qat: measuring on the held-out split",
      "distill step 5/10: loss 0.3",
    ];
    let samples: readonly ProgressSample[] = [];
    for (const m of messages) samples = addSample(samples, parseProgress(m));
    expect(samples).toHaveLength(5);
    const [qat, distill, ...rest] = liveCurves(samples);
    expect(rest).toEqual([]);
    expect(qat).toEqual({
      method: "qat",
      steps: [3, 21, 40, 44],
      loss: [0.5, 0.2, 0.1, 0.12],
      klSteps: [20, 40],
      kl: [0.03, 0.02],
      bestStep: null,
      stoppedEarly: false,
    });
    expect(distill).toMatchObject({ method: "distill", steps: [5], klSteps: [] });
  });
});
