// The sweep launcher's accuracy-aware search block (issue 33): what the form offers and the `search` params it
// sends. The ladder's configs are whole-model weight quantizers; the metrics are a sweep point's measured
// fidelity objectives (the API refuses any other name, backend/sweep_contracts.py SEARCH_METRICS).

export type SearchDirection = "auto" | "at_least" | "at_most";

export interface SearchChoice {
  /** The sensitivity scan that ranks the layers; "" for no search. */
  scan: string;
  metric: string;
  threshold: string;
  direction: SearchDirection;
  low: string;
  high: string;
}

const weights = (bits: number) => ({ type: "weight_quant", bits, per_channel: true });

/** The most aggressive config every layer starts at. */
export const SEARCH_LOW: Record<string, { label: string; config: Record<string, unknown> }> = {
  w4: { label: "4-bit weights, per channel", config: weights(4) },
  w3: { label: "3-bit weights, per channel", config: weights(3) },
  w2: { label: "2-bit weights, per channel", config: weights(2) },
};

/** Where a sensitive layer returns to; float: left uncompressed (the API's null). */
export const SEARCH_HIGH: Record<string, { label: string; config: Record<string, unknown> | null }> = {
  w8: { label: "8-bit weights, per channel", config: weights(8) },
  float: { label: "float (uncompressed)", config: null },
};

/** Metric → the way it must hold when the direction is left to the metric. */
export const SEARCH_METRICS: Record<string, "at_least" | "at_most"> = {
  top1_agreement: "at_least",
  kl_mean: "at_most",
  js_mean: "at_most",
  accuracy_drop_pp: "at_most",
  cosine_mean: "at_least",
  sqnr_db: "at_least",
};

export const NO_SEARCH: SearchChoice = {
  scan: "",
  metric: "top1_agreement",
  threshold: "0.99",
  direction: "auto",
  low: "w4",
  high: "w8",
};

/** The request's `search` block, or why not (null when no scan is chosen: no search). */
export function searchParams(choice: SearchChoice): Record<string, unknown> | string | null {
  if (!choice.scan) return null;
  const text = choice.threshold.trim();
  const threshold = Number(text);
  if (text === "" || !Number.isFinite(threshold)) return "Give the search's threshold as a number, e.g. 0.99.";
  const low = SEARCH_LOW[choice.low];
  const high = SEARCH_HIGH[choice.high];
  if (!low || !high) return "Choose the search's aggressive config and the one sensitive layers return to.";
  return {
    sensitivity_job_id: choice.scan,
    metric: choice.metric,
    threshold,
    direction: choice.direction === "auto" ? null : choice.direction,
    low: low.config,
    high: high.config,
  };
}

/** "top-1 agreement ≥ 0.99": the condition a step must meet, for the page. */
export function condition(metric: string, direction: string, threshold: number): string {
  return `${metric} ${direction === "at_least" ? "≥" : "≤"} ${String(threshold)}`;
}
