// The sweep launcher's accuracy-aware search (issue 33): "find the smallest plan that holds". The scan that ranks
// the layers is picked like the mixed-precision block's (a succeeded scan of the same model); the metric, its
// threshold and direction, the aggressive config every layer starts at and the one sensitive layers return to.
// Descriptions sit outside the labels (aria-describedby): browser drivers find fields by label substrings.
import { useId } from "react";
import type { Job } from "../api/types";
import { formatTime } from "../lib/format";
import { SEARCH_HIGH, SEARCH_LOW, SEARCH_METRICS, type SearchChoice, type SearchDirection } from "../lib/sweepSearch";

export function SweepSearchFields({
  model,
  scans,
  value,
  onChange,
}: {
  model: string;
  /** Succeeded sensitivity scans of the chosen model. */
  scans: Job[];
  value: SearchChoice;
  onChange: (value: SearchChoice) => void;
}) {
  const id = useId();
  const off = !value.scan;
  const inferred = SEARCH_METRICS[value.metric] === "at_most" ? "at most" : "at least";
  return (
    <fieldset className="fields">
      <legend>Find the smallest plan that holds (optional)</legend>
      <p id={`${id}-about`} className="muted small-text">
        Layers ranked by the scan, most sensitive first; step k returns the k most sensitive to the higher config. k = 0
        is measured first, then a binary search over k; every step is measured and stored as a point.
      </p>
      <label>
        Scan ranking the layers
        <select
          value={value.scan}
          aria-describedby={`${id}-about`}
          onChange={(e) => {
            onChange({ ...value, scan: e.target.value });
          }}
          disabled={!model}
        >
          <option value="">
            {!model
              ? "Choose the model first"
              : scans.length
                ? "No search"
                : "No search (no succeeded scan of this model)"}
          </option>
          {scans.map((j) => (
            <option key={j.id} value={j.id}>
              scan {j.id.slice(0, 6)} · {formatTime(j.finished_at)}
            </option>
          ))}
        </select>
      </label>
      <label>
        Metric to hold
        <select
          value={value.metric}
          disabled={off}
          onChange={(e) => {
            onChange({ ...value, metric: e.target.value });
          }}
        >
          {Object.keys(SEARCH_METRICS).map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
      </label>
      <label>
        Threshold value
        <input
          type="text"
          inputMode="decimal"
          value={value.threshold}
          disabled={off}
          aria-describedby={`${id}-way`}
          onChange={(e) => {
            onChange({ ...value, threshold: e.target.value });
          }}
        />
      </label>
      <label>
        Direction
        <select
          value={value.direction}
          disabled={off}
          aria-describedby={`${id}-way`}
          onChange={(e) => {
            onChange({ ...value, direction: e.target.value as SearchDirection });
          }}
        >
          <option value="auto">from the metric ({inferred})</option>
          <option value="at_least">at least</option>
          <option value="at_most">at most</option>
        </select>
      </label>
      <span id={`${id}-way`} className="muted small-text">
        A step holds when its measured metric is at least (or at most) the threshold.
      </span>
      <label>
        Aggressive config
        <select
          value={value.low}
          disabled={off}
          onChange={(e) => {
            onChange({ ...value, low: e.target.value });
          }}
        >
          {Object.entries(SEARCH_LOW).map(([key, option]) => (
            <option key={key} value={key}>
              {option.label}
            </option>
          ))}
        </select>
      </label>
      <label>
        Returned layers at
        <select
          value={value.high}
          disabled={off}
          onChange={(e) => {
            onChange({ ...value, high: e.target.value });
          }}
        >
          {Object.entries(SEARCH_HIGH).map(([key, option]) => (
            <option key={key} value={key}>
              {option.label}
            </option>
          ))}
        </select>
      </label>
    </fieldset>
  );
}
