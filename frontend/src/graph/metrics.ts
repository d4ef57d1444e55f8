// Per-layer numbers to colour the graph by: parameters and MACs (the graph's own), a sensitivity job's score
// per configuration, a fidelity job's accumulated or local SQNR, clipping or dead-unit rate. Layers are found by
// canonical id or alias.
import type { LayerFidelity, LayerProfile, SensitivityReport } from "../api/types";
import type { GraphNode, VisibleItem } from "./types";

export type MetricKind = "params" | "macs" | "sensitivity" | "sqnr_accumulated" | "sqnr_local" | "clip" | "dead";

export interface NodeMetric {
  /** What the legend says, with the unit. */
  label: string;
  unit: string;
  /** True when a higher value is worse (drawn hotter). */
  higherIsWorse: boolean;
  /** Value per graph node id (nodes without a value are absent). */
  values: Map<string, number>;
}

/** Every name → graph node id (id first, so an alias never shadows another node's id). */
export function nameIndex(nodes: GraphNode[]): Map<string, string> {
  const index = new Map<string, string>();
  for (const node of nodes) for (const alias of node.aliases) if (!index.has(alias)) index.set(alias, node.id);
  for (const node of nodes) if (node.module_path && !index.has(node.module_path)) index.set(node.module_path, node.id);
  for (const node of nodes) index.set(node.id, node.id);
  return index;
}

export function graphMetric(nodes: GraphNode[], kind: "params" | "macs"): NodeMetric {
  const values = new Map<string, number>();
  for (const node of nodes) {
    const value = kind === "params" ? node.params : node.macs;
    if (node.kind === "op" && value !== null && value > 0) values.set(node.id, value);
  }
  return kind === "params"
    ? { label: "Parameters", unit: "count", higherIsWorse: true, values }
    : { label: "MACs per forward pass", unit: "multiply-accumulates", higherIsWorse: true, values };
}

/** The score of each layer compressed alone with configuration `configId`: KL mean (nats, higher = more
 * sensitive) or output SQNR (dB, lower = more sensitive), as the scan ranks. */
export function sensitivityMetric(nodes: GraphNode[], report: SensitivityReport, configId: string): NodeMetric {
  const index = nameIndex(nodes);
  const column = report.matrix.columns.indexOf(configId);
  const byKl = report.ranking_metric === "kl";
  const matrix = byKl ? report.matrix.kl_mean : report.matrix.sqnr_db;
  const values = new Map<string, number>();
  report.matrix.rows.forEach((row, i) => {
    const id = index.get(row);
    const value = column >= 0 ? matrix[i]?.[column] : null;
    if (id !== undefined && value !== null && value !== undefined) values.set(id, value);
  });
  return byKl
    ? { label: `Sensitivity (${configId}): KL mean`, unit: "nats", higherIsWorse: true, values }
    : { label: `Sensitivity (${configId}): output SQNR`, unit: "dB", higherIsWorse: false, values };
}

/** A fidelity job's SQNR per layer; `side` says whether this model is the job's golden or compressed one. */
export function sqnrMetric(
  nodes: GraphNode[],
  profile: LayerProfile,
  which: "accumulated" | "local",
  side: "golden" | "compressed",
): NodeMetric {
  const index = nameIndex(nodes);
  const values = new Map<string, number>();
  for (const layer of profile.layers ?? []) {
    const stats = which === "accumulated" ? layer.accumulated : layer.local;
    const value = stats?.sqnr_db;
    if (value === null || value === undefined) continue;
    const id = profileNodeId(index, layer, side);
    if (id !== undefined) values.set(id, value);
  }
  const label = which === "accumulated" ? "Accumulated SQNR" : "Local SQNR";
  return { label, unit: "dB", higherIsWorse: false, values };
}

export type ShiftRate = "clip" | "dead";

/** A fidelity job's activation-shift rate per layer as a percentage: the share of the compressed values
 * entering the layer's quantizer that saturate (clip), or of the golden positive values the compressed
 * model zeroes (dead units, ReLU-family layers). Layers without the rate (no quantizer, not ReLU) are absent. */
export function shiftMetric(
  nodes: GraphNode[],
  profile: LayerProfile,
  rate: ShiftRate,
  side: "golden" | "compressed",
): NodeMetric {
  const index = nameIndex(nodes);
  const values = new Map<string, number>();
  for (const layer of profile.layers ?? []) {
    const value = rate === "clip" ? layer.shift?.clip_rate : layer.shift?.dead_unit_rate;
    if (value === null || value === undefined) continue;
    const id = profileNodeId(index, layer, side);
    if (id !== undefined) values.set(id, 100 * value);
  }
  const label = rate === "clip" ? "Clipping rate at the quantizer" : "Dead units (golden > 0, compressed = 0)";
  return { label, unit: "%", higherIsWorse: true, values };
}

/** The graph node a profile row is about: by canonical id, name or alias (golden side), else by the
 * compressed model's name. */
export function profileNodeId(
  index: Map<string, string>,
  layer: LayerFidelity,
  side: "golden" | "compressed",
): string | undefined {
  const names =
    side === "golden"
      ? [layer.canonical_id, layer.name, ...(layer.aliases ?? [])]
      : [layer.compressed_name, layer.canonical_id];
  return names.map((n) => (n ? index.get(n) : undefined)).find((x) => x !== undefined);
}

/** A box's value: the sum for counts, the worst member for scores; null when no member has one. */
export function itemValue(item: VisibleItem, metric: NodeMetric, sums: boolean): number | null {
  const values = item.members.map((m) => metric.values.get(m.id)).filter((v): v is number => v !== undefined);
  if (values.length === 0) return null;
  if (sums) return values.reduce((a, b) => a + b, 0);
  return metric.higherIsWorse ? Math.max(...values) : Math.min(...values);
}

// A perceptual ramp from cool (good / small) to hot (bad / large): viridis' ends around a warm middle.
const RAMP: [string, ...string[]] = ["#3b4cc0", "#6a8bef", "#aac7fd", "#f2d4c4", "#f39a7b", "#d24b40", "#b40426"];

function mix(a: string, b: string, t: number): string {
  const channel = (hex: string, i: number) => parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16);
  const parts = [0, 1, 2].map((i) => Math.round(channel(a, i) + (channel(b, i) - channel(a, i)) * t));
  return `#${parts.map((p) => p.toString(16).padStart(2, "0")).join("")}`;
}

/** Colour of `value` within [min, max]; "hot" is the worse end. Log scale for counts spanning decades. */
export function colourOf(value: number, min: number, max: number, higherIsWorse: boolean, log: boolean): string {
  const f = (v: number) => (log ? Math.log10(Math.max(v, 1)) : v);
  const span = f(max) - f(min);
  let t = span > 0 ? (f(value) - f(min)) / span : 0.5;
  t = Math.min(1, Math.max(0, higherIsWorse ? t : 1 - t));
  const scaled = t * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(scaled));
  return mix(RAMP[i] ?? RAMP[0], RAMP[i + 1] ?? RAMP[0], scaled - i);
}

export const LEGEND_STOPS = RAMP;

/** Whether white text reads better than dark text on `hex` (relative luminance below ~0.4). */
export function isDark(hex: string): boolean {
  const [r, g, b] = [0, 1, 2].map((i) => parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16) / 255);
  return 0.2126 * (r ?? 1) + 0.7152 * (g ?? 1) + 0.0722 * (b ?? 1) < 0.4;
}
