import { describe, expect, it } from "vitest";
import type { RecoverySummary } from "./recovery";
import {
  choiceProblem,
  adaroundProblem,
  DEFAULT_ADAROUND,
  DEFAULT_CHOICE,
  DEFAULT_TRAINING,
  defaultChoice,
  lossCurves,
  METHOD_ORDER,
  methodsFor,
  methodsToLaunch,
  trainingProblem,
  type MethodName,
} from "./training";

describe("methods by golden format", () => {
  it("offers every method on .pt2, the training-free ones on ONNX, nothing on TorchScript", () => {
    expect(methodsFor("torch_export")).toEqual(METHOD_ORDER);
    expect(methodsFor("onnx")).toEqual(["equalization", "smoothquant", "adaround", "bias_correction"]);
    expect(methodsFor("onnx_zip")).toEqual(["equalization", "smoothquant", "adaround", "bias_correction"]);
    expect(methodsFor("torchscript")).toEqual([]);
    expect(methodsFor(undefined)).toEqual([]);
  });

  it("starts an ONNX launch from the default methods it can run", () => {
    const onnx = defaultChoice("onnx");
    expect([...onnx.chosen].sort()).toEqual(["adaround", "bias_correction", "equalization"]);
    expect(methodsToLaunch(onnx).map((m) => m.name)).toEqual(["equalization", "adaround", "bias_correction"]);
    expect(defaultChoice("torch_export").chosen).toEqual(DEFAULT_CHOICE.chosen);
  });
});

describe("methodsToLaunch", () => {
  it("sends the chosen methods in the pipeline order, training ones with their parameters", () => {
    const chosen = new Set<MethodName>(["bias_correction", "qat", "equalization"]);
    const methods = methodsToLaunch({ ...DEFAULT_CHOICE, chosen, training: { ...DEFAULT_TRAINING, steps: 50 } });
    expect(methods.map((m) => m.name)).toEqual(["equalization", "qat", "bias_correction"]);
    expect(methods[0]).toEqual({ name: "equalization" });
    expect(methods[1]).toEqual({ name: "qat", steps: 50, learning_rate: 1e-3, temperature: 2, alpha: 0, patience: 5 });
  });

  it("sends SmoothQuant after equalization and before AdaRound, with its α", () => {
    const chosen = new Set<MethodName>(["adaround", "smoothquant", "equalization"]);
    const methods = methodsToLaunch({ ...DEFAULT_CHOICE, chosen, smoothAlpha: 0.75 });
    expect(methods).toEqual([
      { name: "equalization" },
      { name: "smoothquant", alpha: 0.75 },
      { name: "adaround", ...DEFAULT_ADAROUND },
    ]);
  });

  it("sends AdaRound with its settings", () => {
    const chosen = new Set<MethodName>(["adaround"]);
    const methods = methodsToLaunch({ ...DEFAULT_CHOICE, chosen, adaround: { ...DEFAULT_ADAROUND, iterations: 40 } });
    expect(methods).toEqual([
      { name: "adaround", iterations: 40, batch_size: 64, learning_rate: 1e-2, reg_weight: 0.01, max_samples: 512 },
    ]);
  });

  it("defaults to the training-free chain", () => {
    expect(methodsToLaunch(DEFAULT_CHOICE).map((m) => m.name)).toEqual(["equalization", "adaround", "bias_correction"]);
  });
});

describe("trainingProblem", () => {
  it("refuses what the API would refuse", () => {
    expect(trainingProblem(DEFAULT_TRAINING)).toBeNull();
    expect(trainingProblem({ ...DEFAULT_TRAINING, steps: 0 })).toMatch(/steps/);
    expect(trainingProblem({ ...DEFAULT_TRAINING, steps: 2.5 })).toMatch(/steps/);
    expect(trainingProblem({ ...DEFAULT_TRAINING, learning_rate: Number.NaN })).toMatch(/learning rate/);
    expect(trainingProblem({ ...DEFAULT_TRAINING, temperature: 0.05 })).toMatch(/temperature/);
    expect(trainingProblem({ ...DEFAULT_TRAINING, alpha: 1.5 })).toMatch(/alpha/);
    expect(trainingProblem({ ...DEFAULT_TRAINING, patience: -1 })).toMatch(/patience/);
  });
});

describe("choiceProblem", () => {
  it("refuses no method, α outside [0, 1] when SmoothQuant is chosen, and bad training parameters", () => {
    const smooth = new Set<MethodName>(["smoothquant"]);
    expect(choiceProblem(DEFAULT_CHOICE)).toBeNull();
    expect(choiceProblem({ ...DEFAULT_CHOICE, chosen: new Set() })).toMatch(/at least one/);
    expect(choiceProblem({ ...DEFAULT_CHOICE, chosen: smooth, smoothAlpha: 1.2 })).toMatch(/α/);
    expect(choiceProblem({ ...DEFAULT_CHOICE, chosen: smooth, smoothAlpha: Number.NaN })).toMatch(/α/);
    expect(choiceProblem({ ...DEFAULT_CHOICE, smoothAlpha: 1.2 })).toBeNull(); // not chosen: not sent
    const qat = new Set<MethodName>(["qat"]);
    expect(choiceProblem({ ...DEFAULT_CHOICE, chosen: qat, training: { ...DEFAULT_TRAINING, steps: 0 } })).toMatch(
      /steps/,
    );
  });
});

describe("lossCurves", () => {
  it("gives one curve per training step, the held-out KL only where measured", () => {
    const summary = {
      steps: [
        { method: "before", details: {} },
        { method: "adaround", details: { layers: [] } },
        {
          method: "qat",
          details: {
            curve: [
              { step: 1, loss: 0.5, heldout_kl: null },
              { step: 2, loss: 0.3, heldout_kl: 0.02 },
              { step: 3, loss: 0.2, heldout_kl: null },
              { step: 4, loss: 0.25, heldout_kl: 0.03 },
            ],
            best_step: 2,
            stopped_early: true,
          },
        },
      ],
    } as unknown as RecoverySummary;
    const curves = lossCurves(summary);
    expect(curves).toHaveLength(1);
    expect(curves[0]).toEqual({
      method: "qat",
      steps: [1, 2, 3, 4],
      loss: [0.5, 0.3, 0.2, 0.25],
      klSteps: [2, 4],
      kl: [0.02, 0.03],
      bestStep: 2,
      stoppedEarly: true,
    });
  });
});

describe("adaroundProblem", () => {
  it("refuses what the API would refuse", () => {
    expect(adaroundProblem(DEFAULT_ADAROUND)).toBeNull();
    expect(adaroundProblem({ ...DEFAULT_ADAROUND, iterations: 0 })).toMatch(/iterations/);
    expect(adaroundProblem({ ...DEFAULT_ADAROUND, iterations: 100_001 })).toMatch(/iterations/);
    expect(adaroundProblem({ ...DEFAULT_ADAROUND, batch_size: 1.5 })).toMatch(/batch size/);
    expect(adaroundProblem({ ...DEFAULT_ADAROUND, learning_rate: 0 })).toMatch(/learning rate/);
    expect(adaroundProblem({ ...DEFAULT_ADAROUND, reg_weight: Number.NaN })).toMatch(/λ/);
    expect(adaroundProblem({ ...DEFAULT_ADAROUND, max_samples: 0 })).toMatch(/samples/);
    expect(choiceProblem({ ...DEFAULT_CHOICE, adaround: { ...DEFAULT_ADAROUND, iterations: 0 } })).toMatch(
      /iterations/,
    );
  });
});
