// Complete result documents for the unit tests, typed by the generated client: each builder fills every
// field with the value a worker writes when it has nothing to say (null, 0, [], false), and a test sets
// only the fields it is about.
import type { ClassificationMetrics, Divergence, OutputMetrics, PointFidelity, SweepPointDoc } from "../api/types";

const numerics = {
  compressed_output: "logits",
  per_sample_shape: [10],
  n_samples: 0,
  n_finite: 0,
  n_nonfinite_golden: 0,
  n_nonfinite_compressed: 0,
  mse: null,
  mae: null,
  max_abs_err: null,
  sqnr_db: null,
  sqnr_db_infinite: false,
  cosine_mean: null,
  cosine_min: null,
};

export function classificationMetrics(fields: Partial<ClassificationMetrics> = {}): ClassificationMetrics {
  return {
    ...numerics,
    kind: "classification",
    outputs_are_probabilities: null,
    num_classes: 10,
    kl_mean_nats: null,
    kl_mean_bits: null,
    kl_reverse_mean_nats: null,
    kl_reverse_mean_bits: null,
    js_mean_nats: null,
    js_mean_bits: null,
    cross_entropy_mean_nats: null,
    cross_entropy_mean_bits: null,
    entropy_golden_mean_nats: null,
    entropy_golden_mean_bits: null,
    entropy_compressed_mean_nats: null,
    entropy_compressed_mean_bits: null,
    kl_max_nats: null,
    tv_mean: null,
    top_k: 5,
    top1_match: null,
    topk_agreement: null,
    topk_overlap: null,
    confidence_mean_golden: null,
    confidence_mean_compressed: null,
    confidence_shift: null,
    label_flips: null,
    labels: null,
    task: null,
    ...fields,
  };
}

export function regressionMetrics(
  fields: Partial<Omit<OutputMetrics, "kind">> & { r2?: number | null } = {},
): OutputMetrics {
  return { ...numerics, per_sample_shape: [1], kind: "regression", r2: null, ...fields };
}

export function divergence(fields: Partial<Divergence> = {}): Divergence {
  return {
    kl_mean: null,
    kl_max: null,
    top1_agreement: null,
    sqnr_db: null,
    sqnr_db_infinite: false,
    mse: null,
    n_samples: 0,
    n_nonfinite: 0,
    ...fields,
  };
}

export function sweepPointDoc(fields: Partial<SweepPointDoc> = {}): SweepPointDoc {
  return {
    id: "",
    config: null,
    plan: null,
    fidelity: null,
    fidelity_simulated: null,
    fidelity_source: null,
    fidelity_export_kind: null,
    fidelity_note: null,
    cost: null,
    runtime: null,
    exports: [],
    notes: [],
    latency: null,
    memory: null,
    slower_than_bigger: null,
    attribution: null,
    calibration: null,
    ...fields,
  };
}

export function pointFidelity(fields: Partial<PointFidelity> = {}): PointFidelity {
  return {
    primary_output: "logits",
    output_kind: "classification",
    n_samples: 0,
    kl_mean: null,
    kl_mean_bits: null,
    kl_max: null,
    kl_reverse_mean: null,
    js_mean: null,
    top1_agreement: null,
    sqnr_db: null,
    sqnr_db_infinite: false,
    cosine_mean: null,
    mse: null,
    max_abs_err: null,
    label_flips: null,
    accuracy_golden: null,
    accuracy_compressed: null,
    accuracy_drop_pp: null,
    ece_golden: null,
    ece_compressed: null,
    f1_macro_vs_golden: null,
    f1_macro_drop_pp: null,
    borderline_agreement: null,
    task_metrics: null,
    n_flagged: null,
    warnings: [],
    ...fields,
  };
}
