// The methods of a recovery launch (run in METHOD_ORDER) and, when chosen, SmoothQuant's α, AdaRound's
// settings (iterations, batch, learning rate, regulariser, samples per layer) and the training parameters of
// distillation or QAT.
import { useId } from "react";
import {
  METHOD_LABELS,
  METHOD_ORDER,
  TRAINING_METHODS,
  type AdaRoundChoice,
  type MethodChoice,
  type MethodName,
  type TrainingChoice,
} from "./training";

const FIELDS: { key: keyof TrainingChoice; label: string; step: string; hint: string }[] = [
  { key: "steps", label: "Steps", step: "1", hint: "one batch each; 300 take seconds for a small CNN on CPU" },
  { key: "learning_rate", label: "Learning rate", step: "any", hint: "Adam" },
  { key: "temperature", label: "Temperature", step: "any", hint: "T of the KL (scaled by T²)" },
  { key: "alpha", label: "Cross-entropy weight", step: "any", hint: "on labels, when the dataset has them" },
  { key: "patience", label: "Patience", step: "1", hint: "held-out checks without improvement; 0: never stop early" },
];

const ADAROUND_FIELDS: { key: keyof AdaRoundChoice; label: string; step: string; hint: string }[] = [
  { key: "iterations", label: "AdaRound iterations", step: "1", hint: "Adam steps per layer" },
  { key: "batch_size", label: "AdaRound batch size", step: "1", hint: "calibration inputs per step" },
  { key: "learning_rate", label: "AdaRound learning rate", step: "any", hint: "Adam, on the rounding variables" },
  { key: "reg_weight", label: "Rounding regulariser λ", step: "any", hint: "pushes each weight to round up or down" },
  { key: "max_samples", label: "Samples per layer", step: "1", hint: "calibration inputs kept for each layer" },
];

export function MethodChooser({
  choice,
  onChange,
  available = METHOD_ORDER,
}: {
  choice: MethodChoice;
  onChange: (c: MethodChoice) => void;
  /** The methods the golden model's format allows (an ONNX model: AdaRound and bias correction). */
  available?: readonly MethodName[];
}) {
  const id = useId();
  const toggle = (m: MethodName, on: boolean) => {
    const chosen = new Set(choice.chosen);
    if (on) chosen.add(m);
    else chosen.delete(m);
    onChange({ ...choice, chosen });
  };
  const training = [...choice.chosen].some((m) => TRAINING_METHODS.has(m));
  return (
    <fieldset className="recovery-methods">
      <legend>Methods (applied in this order)</legend>
      {available.length < METHOD_ORDER.length && (
        <p className="muted small-text">
          On an ONNX model recovery runs the training-free methods (AdaRound runs each layer as the equivalent torch
          op); distillation and QAT need a torch.export (.pt2) model.
        </p>
      )}
      {available.map((m) => (
        <label key={m}>
          <input
            type="checkbox"
            checked={choice.chosen.has(m)}
            onChange={(e) => {
              toggle(m, e.target.checked);
            }}
          />{" "}
          {METHOD_LABELS[m]}
        </label>
      ))}
      {choice.chosen.has("smoothquant") && (
        <label htmlFor={`${id}-smooth-alpha`}>
          SmoothQuant α
          <input
            id={`${id}-smooth-alpha`}
            type="number"
            inputMode="decimal"
            step="any"
            min={0}
            max={1}
            value={Number.isNaN(choice.smoothAlpha) ? "" : choice.smoothAlpha}
            onChange={(e) => {
              onChange({ ...choice, smoothAlpha: e.target.valueAsNumber });
            }}
          />
          <span className="muted small-text">migration strength: s = max|X|^α / max|W|^(1−α) per input channel</span>
        </label>
      )}
      {choice.chosen.has("adaround") && (
        <div className="recovery-training" aria-label="AdaRound settings">
          {ADAROUND_FIELDS.map((f) => (
            <label key={f.key} htmlFor={`${id}-adaround-${f.key}`}>
              {f.label}
              <input
                id={`${id}-adaround-${f.key}`}
                type="number"
                inputMode="decimal"
                step={f.step}
                value={Number.isNaN(choice.adaround[f.key]) ? "" : choice.adaround[f.key]}
                onChange={(e) => {
                  onChange({ ...choice, adaround: { ...choice.adaround, [f.key]: e.target.valueAsNumber } });
                }}
              />
              <span className="muted small-text">{f.hint}</span>
            </label>
          ))}
        </div>
      )}
      {training && (
        <div className="recovery-training" aria-label="Training parameters">
          {FIELDS.map((f) => (
            <label key={f.key} htmlFor={`${id}-${f.key}`}>
              {f.label}
              <input
                id={`${id}-${f.key}`}
                type="number"
                inputMode="decimal"
                step={f.step}
                value={Number.isNaN(choice.training[f.key]) ? "" : choice.training[f.key]}
                onChange={(e) => {
                  onChange({ ...choice, training: { ...choice.training, [f.key]: e.target.valueAsNumber } });
                }}
              />
              <span className="muted small-text">{f.hint}</span>
            </label>
          ))}
        </div>
      )}
    </fieldset>
  );
}
