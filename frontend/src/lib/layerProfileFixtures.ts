// A small layer profile for the tests of the layer-profile modules: five layers with an identical input (∞), a
// layer whose local SQNR is the lowest, a layer without a local comparison, one whose accumulated numbers could
// not be computed, and the output.
import type { LayerFidelity, LayerProfile, LayerStats } from "../api/types";

export function stats(sqnr: number | null | "inf", cosine: number | null = 0.9999): LayerStats {
  return {
    sqnr_db: sqnr === "inf" ? null : sqnr,
    sqnr_db_infinite: sqnr === "inf",
    cosine_mean: cosine,
    cosine_min: cosine === null ? null : cosine - 0.0001,
  };
}

export function layer(depth: number, accumulated: LayerStats, local: LayerStats | null, extra = {}): LayerFidelity {
  return {
    name: `layer_${depth.toString()}`,
    compressed_name: `layer_${depth.toString()}_DequantizeLinear_Output`,
    op_type: depth === 0 ? "Input" : "Conv",
    depth,
    depth_fraction: depth / 4,
    accumulated,
    local,
    local_note: null,
    ...extra,
  };
}

export const LAYERS: LayerFidelity[] = [
  layer(0, stats("inf", 1), stats("inf", 1)),
  layer(1, stats(45.3), stats(30.2)),
  layer(2, stats(42.1), null, { local_note: "the compressed layer has two inputs" }),
  layer(3, stats(null, null), stats(44)),
  layer(4, stats(40), stats(41.5)),
];
export const PROFILE: LayerProfile = {
  job_id: "00000000-0000-0000-0000-000000000001",
  error: null,
  n_samples: 256,
  profile_batch_size: 16,
  layers: LAYERS,
  unmatched_golden: ["conv2d"],
  unmatched_compressed: [],
  notes: [],
};
