import { describe, expect, it } from "vitest";
import { metricCards } from "./metrics";
import { classificationMetrics, regressionMetrics } from "./resultFixtures";

describe("metricCards", () => {
  it("makes cards of the metrics present, with direction and units", () => {
    const cards = metricCards(
      classificationMetrics({
        kl_mean_nats: 0.000105,
        top1_match: 1,
        label_flips: { count: 3, stored: 0, capped: true, items: [] },
        labels: {
          n: 10,
          golden_top1_accuracy: null,
          compressed_top1_accuracy: null,
          top1_accuracy_drop_pp: 0.5,
          golden_topk_accuracy: null,
          compressed_topk_accuracy: null,
          topk_accuracy_drop_pp: null,
          calibration: { golden: null, compressed: null, ece_shift: 0.00075 },
        },
        sqnr_db: 42.29,
        cosine_mean: 0.9999720719,
        mse: 0.0083,
      }),
    );
    expect(cards.map((c) => [c.path, c.value, c.direction])).toEqual([
      ["kl_mean_nats", "1.05e-4 nats", "lower"],
      ["top1_match", "100.00 %", "higher"],
      ["label_flips.count", "3", "lower"],
      ["labels.top1_accuracy_drop_pp", "0.5 pp", "lower"],
      ["labels.calibration.ece_shift", "7.5e-4", "lower"],
      ["sqnr_db", "42.29 dB", "higher"],
      ["cosine_mean", "0.999972", "higher"],
      ["mse", "0.0083", "lower"],
    ]);
    expect(cards.filter((c) => !c.headline).map((c) => c.path)).toEqual(["mse"]);
  });

  it("shows an infinite SQNR and skips null values", () => {
    const cards = metricCards(regressionMetrics({ sqnr_db: null, sqnr_db_infinite: true, r2: null }));
    expect(cards).toHaveLength(1);
    expect(cards[0]?.value).toBe("∞ (identical)");
  });

  it("shows each family's own metric", () => {
    const cards = metricCards(regressionMetrics({ r2: 0.98 }));
    expect(cards.map((c) => [c.path, c.value])).toEqual([["r2", "0.98"]]);
  });

  it("shows the image task's PSNR and SSIM on an image output", () => {
    const task = {
      name: "image" as const,
      data_range: 1,
      psnr_db_vs_golden: 31.5,
      ssim_vs_golden: 0.95,
      against_golden: { psnr_db_mean: 31.5, psnr_db_min: 20, n_identical: 0, ssim_mean: 0.95, ssim_min: 0.8 },
      against_targets: null,
      psnr_drop_db: null,
      ssim_drop: null,
    };
    const metrics = { ...regressionMetrics(), kind: "tensor" as const, per_sample_shape: [1, 24, 24], task };
    expect(metricCards(metrics).map((c) => [c.path, c.direction])).toEqual([
      ["task.psnr_db_vs_golden", "higher"],
      ["task.ssim_vs_golden", "higher"],
    ]);
  });
  it("shows the segmentation task's IoU, agreement and drops on a segmentation output, and no image card", () => {
    const scores = { miou: 0.9, pixel_accuracy: 0.97, per_class_iou: [0.98, 0.82, null], boundary_f1: 0.95 };
    const task = {
      name: "segmentation" as const,
      output: "logits",
      output_form: "logits" as const,
      num_classes: 3,
      ignore_index: 255,
      boundary_tolerance: 2,
      miou_vs_golden: 0.93,
      pixel_agreement: 0.99,
      boundary_f1_vs_golden: null,
      against_golden: scores,
      against_masks: null,
      miou_drop: 0.026,
      pixel_accuracy_drop: 0.005,
      boundary_f1_drop: null,
    };
    const metrics = { ...regressionMetrics(), kind: "tensor" as const, per_sample_shape: [3, 24, 24], task };
    expect(metricCards(metrics).map((c) => [c.path, c.value, c.direction])).toEqual([
      ["task.miou_vs_golden", "93.00 %", "higher"],
      ["task.pixel_agreement", "99.00 %", "higher"],
      ["task.miou_drop", "0.026", "lower"],
    ]);
  });
  it("shows the CTC task's error rates on a speech output", () => {
    const scores = {
      wer: 0.06,
      cer: 0.02,
      substitutions: 8,
      deletions: 1,
      insertions: 0,
      hits: 139,
      n_reference_words: 148,
      char_substitutions: 0,
      char_deletions: 8,
      char_insertions: 0,
      n_reference_chars: 368,
      exact_match: 0.87,
      n_utterances: 60,
    };
    const task = {
      name: "ctc" as const,
      output: "logits",
      vocabulary_size: 7,
      blank: 0,
      word_delimiter: "|",
      wer_vs_golden: 0.027,
      cer_vs_golden: null,
      exact_match_vs_golden: 0.93,
      against_golden: scores,
      against_transcripts: null,
      wer_delta: 0.0135,
      cer_delta: null,
    };
    const metrics = { ...regressionMetrics(), kind: "tensor" as const, per_sample_shape: [48, 7], task };
    expect(metricCards(metrics).map((c) => [c.path, c.value, c.direction])).toEqual([
      ["task.wer_vs_golden", "2.70 %", "lower"],
      ["task.exact_match_vs_golden", "93.00 %", "higher"],
      ["task.wer_delta", "0.0135", "lower"],
    ]);
  });
});
