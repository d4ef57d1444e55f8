// The numbers a sweep measures per point (its "objectives": kl_mean, size_bytes, latency_p50_ms_b1 …), what
// each means, which way is better, how to print it and whether its axis is better on a log scale.
import { formatBytes, formatCount, formatNumber, formatPercent } from "./format";

export type Direction = "min" | "max";

export interface ObjectiveInfo {
  name: string;
  /** "KL mean", "Latency p50 @ batch 32". */
  label: string;
  /** Unit in axis titles ("nats", "bytes", "ms", "×"), or "". */
  unit: string;
  /** The better way by default. */
  direction: Direction;
  /** A log axis by default (values spanning decades, never negative). */
  log: boolean;
  /** Percent-valued fractions (0..1): a % axis. */
  percent: boolean;
  format: (value: number | null | undefined) => string;
  /** Sort order among the objectives (fidelity, cost, latency). */
  order: number;
}

const nats = (v: number | null | undefined) =>
  typeof v === "number" && Number.isFinite(v) ? `${formatNumber(v)} nats` : "—";
const unit =
  (suffix: string, digits = 4) =>
  (v: number | null | undefined) =>
    typeof v === "number" && Number.isFinite(v) ? `${formatNumber(v, digits)}${suffix}` : "—";

type Known = Omit<ObjectiveInfo, "name" | "order">;

const KNOWN: [string, Known][] = [
  ["kl_mean", { label: "KL mean", unit: "nats", direction: "min", log: true, percent: false, format: nats }],
  ["js_mean", { label: "JS mean", unit: "nats", direction: "min", log: true, percent: false, format: nats }],
  [
    "top1_agreement",
    {
      label: "Top-1 agreement",
      unit: "",
      direction: "max",
      log: false,
      percent: true,
      format: (v) => formatPercent(v),
    },
  ],
  ["sqnr_db", { label: "SQNR", unit: "dB", direction: "max", log: false, percent: false, format: unit(" dB") }],
  [
    "cosine_mean",
    { label: "Cosine similarity", unit: "", direction: "max", log: false, percent: false, format: unit("", 6) },
  ],
  [
    "accuracy",
    { label: "Accuracy", unit: "", direction: "max", log: false, percent: true, format: (v) => formatPercent(v) },
  ],
  [
    "accuracy_drop_pp",
    { label: "Accuracy drop", unit: "pp", direction: "min", log: false, percent: false, format: unit(" pp", 3) },
  ],
  ["ece", { label: "ECE", unit: "", direction: "min", log: false, percent: false, format: unit("") }],
  [
    "f1_macro_vs_golden",
    { label: "Macro F1 vs golden", unit: "", direction: "max", log: false, percent: false, format: unit("", 4) },
  ],
  [
    "f1_macro_drop_pp",
    { label: "Macro F1 drop", unit: "pp", direction: "min", log: false, percent: false, format: unit(" pp", 3) },
  ],
  [
    "borderline_agreement",
    {
      label: "Borderline agreement",
      unit: "",
      direction: "max",
      log: false,
      percent: true,
      format: (v) => formatPercent(v),
    },
  ],
  ["size_bytes", { label: "Size", unit: "bytes", direction: "min", log: true, percent: false, format: formatBytes }],
  [
    "compression_ratio",
    { label: "Compression ratio", unit: "×", direction: "max", log: false, percent: false, format: unit(" ×", 3) },
  ],
  [
    "params_kept",
    { label: "Parameters kept", unit: "", direction: "min", log: true, percent: false, format: formatCount },
  ],
  ["macs", { label: "MACs", unit: "per sample", direction: "min", log: true, percent: false, format: formatCount }],
  ["bops", { label: "BOPs", unit: "bit operations", direction: "min", log: true, percent: false, format: formatCount }],
  // Run-time memory of the chosen export: the peak RSS of an onnxruntime session running it, in a child process,
  // less the interpreter + onnxruntime baseline (worker/engine/sweep/runtime_memory.py); and that peak itself.
  [
    "runtime_memory_mib",
    { label: "Run-time memory", unit: "MiB", direction: "min", log: false, percent: false, format: unit(" MiB", 4) },
  ],
  [
    "runtime_memory_ratio",
    {
      label: "Run-time memory vs fp32",
      unit: "× fp32",
      direction: "min",
      log: false,
      percent: false,
      format: unit(" × fp32", 3),
    },
  ],
  [
    "peak_rss_mib",
    {
      label: "Peak RSS of the session",
      unit: "MiB",
      direction: "min",
      log: false,
      percent: false,
      format: unit(" MiB", 4),
    },
  ],
];
const KNOWN_BY_NAME = new Map(KNOWN);

// Task metrics (task.miou_drop, task.wer_delta...): their directions as the API states them (the sweep schema's
// x-task-metrics, see sweepTask.ts), learnt when the job kinds load; before that, lower is better.
const TASK_DIRECTIONS = new Map<string, Direction>();

export function learnTaskDirections(table: Record<string, Record<string, Direction>>): void {
  for (const metrics of Object.values(table))
    for (const [name, direction] of Object.entries(metrics)) TASK_DIRECTIONS.set(name, direction);
}

const LATENCY = /^latency_(p50|p90)_ms_b(\d+)$/;
const RATIO = /^latency_ratio_b(\d+)$/;

/** What an objective is; unknown names are shown as they are, lower is better, linear. */
export function objectiveInfo(name: string): ObjectiveInfo {
  const known = KNOWN_BY_NAME.get(name);
  if (known) return { name, ...known, order: KNOWN.findIndex(([n]) => n === name) };
  const latency = LATENCY.exec(name);
  if (latency) {
    const batch = Number(latency[2]);
    return {
      name,
      label: `Latency ${latency[1] ?? ""} @ batch ${batch.toString()}`,
      unit: "ms",
      direction: "min",
      log: false,
      percent: false,
      format: unit(" ms"),
      order: 100 + batch * 4 + (latency[1] === "p50" ? 0 : 1),
    };
  }
  if (name.startsWith("task.")) {
    return {
      name,
      label: `Task ${name.slice("task.".length).replaceAll("_", " ")}`,
      unit: "",
      direction: TASK_DIRECTIONS.get(name) ?? "min",
      log: false,
      percent: false,
      format: unit("", 4),
      order: 50,
    };
  }
  const ratio = RATIO.exec(name);
  if (ratio) {
    const batch = Number(ratio[1]);
    return {
      name,
      label: `Latency vs fp32 @ batch ${batch.toString()}`,
      unit: "× fp32",
      direction: "min",
      log: false,
      percent: false,
      format: unit(" × fp32", 3),
      order: 100 + batch * 4 + 2,
    };
  }
  return {
    name,
    label: name,
    unit: "",
    direction: "min",
    log: false,
    percent: false,
    format: (v) => formatNumber(v),
    order: 10_000,
  };
}

export const directionOf = (name: string): Direction => objectiveInfo(name).direction;

/** "KL mean (nats)". */
export function axisLabel(name: string): string {
  const info = objectiveInfo(name);
  return info.unit ? `${info.label} (${info.unit})` : info.label;
}

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** The objectives at least one point has a number for, in a reading order (fidelity, cost, latency). */
export function availableObjectives(
  points: readonly { objectives: Record<string, number | null | undefined> }[],
): string[] {
  const names = new Set<string>();
  for (const p of points) for (const [name, value] of Object.entries(p.objectives)) if (finite(value)) names.add(name);
  return [...names].sort((a, b) => objectiveInfo(a).order - objectiveInfo(b).order || a.localeCompare(b));
}

/** The batch sizes the sweep timed (from latency_p50_ms_bN), ascending. */
export function latencyBatches(objectives: readonly string[]): number[] {
  const batches = objectives
    .map((n) => LATENCY.exec(n))
    .filter((m) => m?.[1] === "p50")
    .map((m) => Number(m?.[2]));
  return [...new Set(batches)].sort((a, b) => a - b);
}

export const latencyObjective = (batch: number): string => `latency_p50_ms_b${batch.toString()}`;
export const ratioObjective = (batch: number): string => `latency_ratio_b${batch.toString()}`;

/**
 * The axes a page opens with: size on x and KL on y (a classifier), else SQNR; whatever exists otherwise.
 * Never the same objective twice when there are two.
 */
export function defaultAxes(available: readonly string[]): { x: string; y: string } {
  const pick = (preferred: string[], not: string | null) =>
    preferred.find((n) => available.includes(n) && n !== not) ?? available.find((n) => n !== not) ?? available[0] ?? "";
  const x = pick(["size_bytes", "bops", "compression_ratio", "macs"], null);
  const y = pick(["kl_mean", "sqnr_db", "js_mean", "top1_agreement", "cosine_mean"], x);
  return { x, y };
}
