// Pure helpers of the attention-map panel (AttentionMaps): the head × layer matrix of one metric (KL or
// JS) for the Plotly heatmap, with the numbers written in the cells, and its CSV rows.
import type { operations } from "../client/schema";
import type { Cell } from "../lib/csv";
import { formatNumber } from "../lib/format";

export type FidelityAttention = operations["getFidelityAttention"]["responses"][200]["content"]["application/json"];
export type AttentionMetric = "kl" | "js";

export interface AttentionHeatmap {
  /** Column labels: "head 0" … */
  heads: string[];
  /** Row labels, one per attention layer in graph order: "L0 · node_softmax". */
  layers: string[];
  /** z[layer][head]; null where the value is undefined or +∞ (the cell's text says which). */
  z: (number | null)[][];
  /** The number shown in each cell: formatted, "∞" for an infinite KL, "—" when undefined. */
  text: string[][];
  /** The largest finite value (the colour scale's top); 0 when there is none. */
  zmax: number;
}

/** The head × layer matrix of `metric`, layers top to bottom in graph order. */
export function attentionHeatmap(doc: FidelityAttention, metric: AttentionMetric): AttentionHeatmap {
  const heads = Array.from({ length: doc.heads }, (_, h) => `head ${h.toString()}`);
  const layers = doc.layers.map((layer, i) => `L${i.toString()} · ${layer.golden_node}`);
  const z: (number | null)[][] = [];
  const text: string[][] = [];
  let zmax = 0;
  for (const layer of doc.layers) {
    const values = metric === "kl" ? layer.kl : layer.js;
    const row: (number | null)[] = [];
    const cells: string[] = [];
    for (let h = 0; h < doc.heads; h++) {
      const v = values[h] ?? null;
      const infinite = metric === "kl" && (layer.kl_infinite[h] ?? false);
      const finite = v !== null && Number.isFinite(v) && !infinite;
      row.push(finite ? v : null);
      cells.push(infinite ? "∞" : formatNumber(finite ? v : null, 2));
      if (finite) zmax = Math.max(zmax, v);
    }
    z.push(row);
    text.push(cells);
  }
  return { heads, layers, z, text, zmax };
}

export const ATTENTION_CSV_HEADER = [
  "layer",
  "golden_node",
  "compressed_node",
  "head",
  "kl_nats",
  "kl_infinite",
  "js_nats",
];

/** One row per layer × head, both metrics (null for an undefined or infinite value). */
export function attentionCsvRows(doc: FidelityAttention): Cell[][] {
  return doc.layers.flatMap((layer, i) =>
    Array.from({ length: doc.heads }, (_, h) => [
      i,
      layer.golden_node,
      layer.compressed_node,
      h,
      layer.kl[h] ?? null,
      layer.kl_infinite[h] ?? false,
      layer.js[h] ?? null,
    ]),
  );
}

/** The (layer, head) with the largest finite value of `metric`, or null when there is none. */
export function worstHead(
  doc: FidelityAttention,
  metric: AttentionMetric,
): { layer: number; head: number; value: number } | null {
  let best: { layer: number; head: number; value: number } | null = null;
  for (const [i, layer] of doc.layers.entries()) {
    for (const [h, v] of (metric === "kl" ? layer.kl : layer.js).entries()) {
      if (v !== null && Number.isFinite(v) && (best === null || v > best.value)) best = { layer: i, head: h, value: v };
    }
  }
  return best;
}
