// The per-layer profile of a fidelity job (GET /jobs/{id}/fidelity/layers) read for the report: each layer's
// SQNR and cosine by kind, the layer that adds the most error, the counts of infinite and missing values.
// Its charts are in layerProfileCharts (axes: layerProfileAxes), CSV in layerProfileCsv, table sorting in
// layerProfileSort, the kernel-gap callout in kernelGap.
//
// Accumulated stats compare the compressed network up to a layer with the golden one (the error carried so
// far); local stats run one compressed layer alone on the golden layer's inputs (the error it adds). An SQNR
// of +∞ (identical outputs) arrives as sqnr_db = null with sqnr_db_infinite = true: it is drawn at a cap
// above every finite value, with its own marker and "∞" in the hover, never dropped. A null that is not
// infinite (the number could not be computed) is a gap in the line. A QDQ model's profile also carries, per
// re-quantized tensor, the error of the model's own quantizer there (qdq_err: the tensor entering its
// QuantizeLinear vs its DequantizeLinear's output, as onnxruntime's qdq_loss_debug reports it): drawn as a
// third trace only when some layer has it.
import type { LayerFidelity, LayerProfile, LayerStats } from "../api/types";
import { formatNumber } from "./format";

export type Kind = "accumulated" | "local" | "qdq_err";
export const KINDS: readonly Kind[] = ["accumulated", "local", "qdq_err"];
/** The kinds every layer has (qdq_err exists only where the compressed model re-quantizes a tensor). */
const LAYER_KINDS: readonly Kind[] = ["accumulated", "local"];

/** The kinds a profile has values of: accumulated and local always, qdq_err when some layer has it. */
export function kindsOf(layers: readonly LayerFidelity[]): Kind[] {
  return KINDS.filter((kind) => kind !== "qdq_err" || layers.some((l) => l.qdq_err));
}

export function layersOf(profile: LayerProfile): LayerFidelity[] {
  return profile.layers ?? [];
}

export function statsOf(layer: LayerFidelity, kind: Kind): LayerStats | null {
  if (kind === "qdq_err") return layer.qdq_err ?? null;
  return kind === "accumulated" ? layer.accumulated : layer.local;
}

const finite = (v: number | null | undefined): v is number => typeof v === "number" && Number.isFinite(v);

/** SQNR in dB as a number: +Infinity when the outputs are identical, null when there is none. */
export function sqnrOf(stats: LayerStats | null | undefined): number | null {
  if (!stats) return null;
  if (stats.sqnr_db_infinite) return Number.POSITIVE_INFINITY;
  return finite(stats.sqnr_db) ? stats.sqnr_db : null;
}

export function cosineOf(stats: LayerStats | null | undefined): number | null {
  return finite(stats?.cosine_mean) ? stats.cosine_mean : null;
}

/** "42.07 dB", "∞ dB" or "—". */
export function formatSqnr(stats: LayerStats | null | undefined, unit = " dB"): string {
  const v = sqnrOf(stats);
  if (v === null) return "—";
  return v === Number.POSITIVE_INFINITY ? `∞${unit}` : `${formatNumber(v)}${unit}`;
}

export function formatCosine(stats: LayerStats | null | undefined): string {
  return formatNumber(cosineOf(stats), 6);
}

/**
 * The layer that adds the most error: the lowest finite local SQNR (the earliest layer on a tie). Null when
 * no layer has a finite local SQNR (all identical, or no local comparison could be made).
 */
export function worstLayer(layers: readonly LayerFidelity[]): LayerFidelity | null {
  let worst: LayerFidelity | null = null;
  let worstValue = Number.POSITIVE_INFINITY;
  for (const layer of layers) {
    const v = sqnrOf(layer.local);
    if (
      v !== null &&
      Number.isFinite(v) &&
      (v < worstValue || (v === worstValue && worst && layer.depth < worst.depth))
    ) {
      worst = layer;
      worstValue = v;
    }
  }
  return worst;
}

/** "…ce.0/Conv_output_0": the end of a long name, which is the specific part of ONNX and module paths. */
export function shortName(name: string, max = 16): string {
  return name.length <= max ? name : `…${name.slice(name.length - max + 1)}`;
}

/** How many SQNR values (of both kinds) are +∞. */
export function countInfinite(layers: readonly LayerFidelity[]): number {
  return layers
    .flatMap((l) => LAYER_KINDS.map((k) => sqnrOf(statsOf(l, k))))
    .filter((v) => v === Number.POSITIVE_INFINITY).length;
}

/** How many values of a metric (of both kinds) are missing: the gaps in its chart. */
export function countMissing(layers: readonly LayerFidelity[], metric: "sqnr" | "cosine"): number {
  const read = metric === "sqnr" ? sqnrOf : cosineOf;
  return layers.flatMap((l) => LAYER_KINDS.map((k) => read(statsOf(l, k)))).filter((v) => v === null).length;
}
