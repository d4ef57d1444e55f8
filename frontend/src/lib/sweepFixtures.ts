// The sweep points, rows and frontier the tests of the sweep modules share: a golden point, three compressed ones
// (real and simulated) and a frontier over them.
import type { FrontierOut, SweepPoint } from "../api/types";
import { toRow, type SweepRow } from "./sweep";
import { sweepPointDoc } from "./resultFixtures";

export const JOB = "11111111-2222-3333-4444-555555555555";

export function point(
  index: number,
  label: string,
  objectives: Record<string, number | null>,
  executable?: boolean,
): SweepPoint {
  return {
    job_id: JOB,
    index,
    id: `${JOB}:${index.toString()}`,
    label,
    config: index === 0 ? { type: "none" } : { type: "weight_quant", bits: 8, per_channel: true },
    objectives,
    point:
      executable === undefined
        ? null
        : sweepPointDoc({
            runtime: {
              executable,
              needs_sparse_kernels: false,
              runtime: "onnxruntime CPUExecutionProvider",
              real_export: executable ? "real-int8-weights" : null,
              real_kinds: [],
              matches_simulation: true,
              runtime_note: "note",
            },
            latency: {
              environment: null,
              settings: null,
              file: null,
              file_size_bytes: null,
              session_load_ms: null,
              batches: [
                {
                  batch_size: 1,
                  p50_ms: 0.5,
                  p90_ms: 0.6,
                  mean_ms: 0.55,
                  min_ms: 0.4,
                  max_ms: 0.7,
                  per_sample_p50_ms: 0.5,
                  warmup: 10,
                  repeats: 30,
                },
              ],
            },
          }),
    export_available: true,
    export_manifest: null,
  };
}

export const ROWS: SweepRow[] = [
  point(
    0,
    "fp32",
    {
      kl_mean: 0,
      size_bytes: 16000,
      top1_agreement: 1,
      latency_p50_ms_b1: 1,
      latency_p90_ms_b1: 1.1,
      latency_ratio_b1: 1,
    },
    true,
  ),
  point(
    1,
    "w8",
    {
      kl_mean: 1e-5,
      size_bytes: 4000,
      top1_agreement: 1,
      latency_p50_ms_b1: 1.5,
      latency_p90_ms_b1: 1.6,
      latency_ratio_b1: 1.5,
    },
    true,
  ),
  point(
    2,
    "w4a8",
    { kl_mean: 0.004, size_bytes: 2000, top1_agreement: 0.99, latency_p50_ms_b1: 0.8, latency_ratio_b1: 0.8 },
    false,
  ),
  point(3, "lowrank", { kl_mean: 0.4, size_bytes: 8000, top1_agreement: 0.88, latency_p50_ms_b1: null }, true),
].map(toRow);

export const FRONTIER: FrontierOut = {
  objectives: [
    { name: "size_bytes", direction: "min" },
    { name: "kl_mean", direction: "min" },
  ],
  frontier: [2, 1, 0].map((i) => {
    const r = ROWS[i] as SweepRow;
    return { id: r.id, job_id: JOB, index: r.index, label: r.label, objectives: r.objectives, knee: i === 1 };
  }),
  knee: `${JOB}:1`,
  knee_method: "max_distance",
  excluded: [],
  filtered: 0,
  n_points: 4,
  constraints: [],
};
