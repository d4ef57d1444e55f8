// What a metric card is made of (shared by the report's cards and the task adapters' cards).
import type { OutputMetrics } from "../api/types";

export type Direction = "lower" | "higher" | "closer to 0";

export type Value = number | null | undefined;

export interface MetricDef {
  /** Dotted path in the output's metrics (the card's key, and its name in the API's documents). */
  path: string;
  value: (metrics: OutputMetrics) => Value;
  label: string;
  explanation: string;
  direction?: Direction;
  unit: "nats" | "fraction" | "dB" | "pp" | "count" | "";
  /** Significant digits (default 4); cosine similarities need more to differ from 1. */
  digits?: number;
  /** Shown first; the others sit under "more metrics". */
  headline?: boolean;
}
