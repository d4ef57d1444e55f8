// The sensitivity report the tests of the sensitivity modules share: the demo digits CNN scanned with four
// configurations.
import type { SensitivityReport } from "../api/types";
import { divergence } from "./resultFixtures";

export function layer(name: string, type: string, depth: number, total: number) {
  return {
    name,
    type,
    params: 1000 * (depth + 1),
    weight_params: 900 * (depth + 1),
    macs: 5000,
    depth_index: depth,
    depth_fraction: depth / (total - 1),
    shared_with: [],
    notes: [],
  };
}

// The demo digits CNN scanned with four configurations (numbers from a real scan, trimmed), with the config
// id "prune-u0.5" that has a dot in it.
export const REPORT: SensitivityReport = {
  job_id: "00000000-0000-0000-0000-000000000001",
  model_id: "00000000-0000-0000-0000-000000000002",
  dataset_id: "00000000-0000-0000-0000-000000000003",
  mode: "only",
  primary_output: "logits",
  output_kind: "classification",
  n_samples: 100,
  ranking_metric: "kl",
  task: "auto",
  rank_by: null,
  configs: [
    {
      id: "w8-sym-tensor",
      config: { type: "weight_quant", bits: 8, symmetric: true, per_channel: false },
      weight_bits: 8,
    },
    {
      id: "w4-sym-tensor",
      config: { type: "weight_quant", bits: 4, symmetric: true, per_channel: false },
      weight_bits: 4,
    },
    { id: "fp16", config: { type: "float_cast", dtype: "fp16" }, weight_bits: 16 },
    { id: "prune-u0.5", config: { type: "magnitude_prune", sparsity: 0.5 }, weight_bits: null },
  ],
  layers: [layer("conv1", "Conv", 0, 3), layer("conv2", "Conv", 1, 3), layer("fc", "Gemm", 2, 3)],
  matrix: {
    rows: ["conv1", "conv2", "fc"],
    columns: ["w8-sym-tensor", "w4-sym-tensor", "fp16", "prune-u0.5"],
    kl_mean: [
      [1.5e-5, 9.2e-4, 0, 0.0185],
      [4.1e-6, 1.07e-3, 1.3e-8, 0.00244],
      [3.6e-5, 8.3e-3, null, 0.00262],
    ],
    top1_agreement: [
      [1, 0.99, 1, 0.99],
      [1, 0.99, 1, 1],
      [1, 0.99, null, 0.99],
    ],
    sqnr_db: [
      [50.8, 30.7, null, 14.1],
      [53.9, 26.8, 81.2, 22.5],
      [44.9, 20.1, null, 22.5],
    ],
  },
  ranking: {
    overall: ["fc", "conv1", "conv2"],
    by_config: {
      "w8-sym-tensor": ["fc", "conv1", "conv2"],
      "w4-sym-tensor": ["fc", "conv2", "conv1"],
      fp16: ["conv2", "conv1", "fc"],
      "prune-u0.5": ["conv1", "fc", "conv2"],
    },
  },
  whole_model: {
    "w8-sym-tensor": divergence({ kl_mean: 7.9e-5, kl_max: 0.0047, top1_agreement: 1, sqnr_db: 42.2 }),
    fp16: divergence({ kl_mean: 0, kl_max: 0, top1_agreement: 1, sqnr_db: null, sqnr_db_infinite: true }),
  },
  notes: [],
};
