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
  it("shows the detection task's mAP drops and label-free mAP on a detector's output", () => {
    const scores = {
      map: 0.5,
      map50: 0.8,
      map75: 0.4,
      map_small: 0.3,
      map_medium: 0.6,
      map_large: null,
      ar100: 0.55,
      per_class: [],
      n_truth: 10,
      n_detections: 12,
    };
    const task = {
      name: "detection" as const,
      format: "yolo" as const,
      box_format: "xyxy" as const,
      score_threshold: 0.25,
      iou_threshold: 0.45,
      head_output: "output0",
      boxes_output: null,
      scores_output: null,
      labels_output: null,
      count_output: null,
      image_size: [64, 64],
      n_images: 5,
      detections: { golden: 12, compressed: 11 },
      invalid_boxes: { golden: 0, compressed: 2 },
      images_capped: { golden: 0, compressed: 0 },
      map_vs_golden: 0.61,
      map50_vs_golden: 0.9,
      golden_map: 0.5,
      golden_map50: 0.8,
      compressed_map: 0.45,
      compressed_map50: 0.7,
      map_drop: 5,
      map50_drop: 10,
      against_golden: scores,
      against_labels: { golden: scores, compressed: scores },
    };
    const metrics = { ...regressionMetrics(), kind: "tensor" as const, per_sample_shape: [7, 64], task };
    expect(metricCards(metrics).map((c) => [c.path, c.value, c.direction])).toEqual([
      ["task.map50_drop", "10 pp", "lower"],
      ["task.map_drop", "5 pp", "lower"],
      ["task.map50_vs_golden", "90.00 %", "higher"],
      ["task.map_vs_golden", "61.00 %", "higher"],
      ["task.golden_map50", "80.00 %", "higher"],
      ["task.compressed_map50", "70.00 %", "higher"],
      ["task.invalid_boxes.compressed", "2", "lower"],
    ]);
  });
  it("shows the language-model task's perplexity change, next-token KL and agreement on an LM's logits", () => {
    const task = {
      name: "language_model" as const,
      n_tokens: 700,
      n_next_tokens: 668,
      nll_reference_only: false,
      top_k: 5,
      kl_mean: 0.0123,
      kl_reverse_mean: 0.012,
      js_mean: 0.003,
      top1_agreement: 0.95,
      topk_overlap: 0.9,
      nll_golden: 1.2,
      nll_compressed: 1.25,
      nll_delta: 0.05,
      ppl_golden: 3.32,
      ppl_compressed: 3.49,
      ppl_delta: 0.17,
      kl_by_position: [0.01, null],
      generation: null,
      gen_exact_match_rate: null,
      gen_bleu_vs_golden: null,
      gen_chrf_vs_golden: null,
      gen_rouge_l_vs_golden: null,
      gen_bleu_drop: null,
      gen_semantic_similarity: null,
      gen_semantic_drop: null,
    };
    const metrics = { ...regressionMetrics(), kind: "tensor" as const, per_sample_shape: [32, 60], task };
    expect(metricCards(metrics).map((c) => [c.path, c.direction])).toEqual([
      ["task.ppl_delta", "lower"],
      ["task.kl_mean", "lower"],
      ["task.top1_agreement", "higher"],
    ]);
  });
  it("shows the signal task's SI-SDR and drops on a waveform output", () => {
    const task = {
      name: "signal" as const,
      output: "audio",
      snr_db_vs_golden: 30.5,
      si_sdr_db_vs_golden: 29.25,
      n_identical: 0,
      against_clean: { golden: { snr_db: 12, si_sdr_db: 11.5 }, compressed: { snr_db: 11, si_sdr_db: 10 } },
      snr_drop_db: 1,
      si_sdr_drop_db: 1.5,
    };
    const metrics = { ...regressionMetrics(), kind: "tensor" as const, per_sample_shape: [400], task };
    expect(metricCards(metrics).map((c) => [c.path, c.direction])).toEqual([
      ["task.si_sdr_db_vs_golden", "higher"],
      ["task.si_sdr_drop_db", "lower"],
      ["task.snr_drop_db", "lower"],
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
