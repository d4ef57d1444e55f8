// Calibration kept apart (issue 33), for the sweep and sensitivity launchers: when a configuration quantizes
// activations, an optional calibration set (never the evaluation dataset) and its sample count; without one
// the evaluation dataset's first samples are held out. The sentence says which samples will calibrate.
import type { ReactNode } from "react";
import type { Dataset } from "../api/types";
import { calibrationSentence, chosenCalibrationSet } from "../lib/sweepCalibration";
import { DatasetSelect } from "./fields";

export function CalibrationFields({
  datasets,
  evaluation,
  value,
  onChange,
  calibrates,
  samples,
  what,
}: {
  datasets: readonly Dataset[];
  evaluation: string;
  value: string;
  onChange: (id: string) => void;
  calibrates: boolean;
  /** The calibration_samples field. */
  samples: ReactNode;
  /** "evaluated" (a sweep) or "measured" (a scan). */
  what: string;
}) {
  const chosen = chosenCalibrationSet(datasets, evaluation, value, calibrates);
  const sentence = calibrates
    ? calibrationSentence(true, datasets.find((d) => d.id === evaluation)?.n_samples ?? null, null, chosen, null)
    : "No configuration quantizes activations: nothing is calibrated.";
  return (
    <fieldset className="fields">
      <legend>Calibration</legend>
      <DatasetSelect
        label="Calibration set (optional)"
        optional
        datasets={datasets.filter((d) => d.id !== evaluation)}
        value={chosen?.id ?? ""}
        onChange={onChange}
      />
      {samples}
      <span className="muted small-text">
        {sentence} Calibration samples are never {what}.
      </span>
    </fieldset>
  );
}
