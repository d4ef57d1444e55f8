import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { TaskSample } from "./inspectorQueries";
import { ImageOutputs, SegmentationMasks, SignalPlayback } from "./TaskMediaViews";

const JOB = "00000000-0000-0000-0000-000000000001";

describe("SegmentationMasks", () => {
  it("draws each map over the input picture and lists the classes' shares", () => {
    const sample: Extract<TaskSample, { task: "segmentation" }> = {
      task: "segmentation",
      job_id: JOB,
      index: 3,
      image_size: [16, 32],
      picture: "/api/v1/input.png",
      golden: "data:image/png;base64,G",
      compressed: "data:image/png;base64,C",
      truth: null,
      disagreement: "data:image/png;base64,D",
      ignore_index: 255,
      classes: [{ label: 1, colour: "#800000", golden_pixels: 128, compressed_pixels: 64, truth_pixels: null }],
      classes_clipped: false,
      n_pixels: 512,
      disagreeing_pixels: 64,
      iou_vs_golden: 0.5,
      pixel_agreement: 0.875,
    };
    const html = renderToStaticMarkup(<SegmentationMasks sample={sample} />);
    expect(html).not.toContain('data-testid="mask-truth"');
    expect(html.match(/src="\/api\/v1\/input.png"/g)).toHaveLength(2); // under golden and compressed
    expect(html).toContain("width:240px;height:120px");
    expect(html).toContain("Mark the 64 pixels where the models differ");
    expect(html).toContain("25 %"); // class 1: 128 of 512 pixels for the golden model
    expect(html).toContain("87.5 %");
  });
});

describe("ImageOutputs", () => {
  it("shows three pixelated panels of one size and the difference's scale", () => {
    const sample: Extract<TaskSample, { task: "image" }> = {
      task: "image",
      job_id: JOB,
      index: 0,
      output: "out",
      data_range: 1,
      image_size: [24, 24],
      golden: "data:image/png;base64,G",
      compressed: "data:image/png;base64,C",
      difference: "data:image/png;base64,D",
      value_range: [0, 1],
      difference_gain: 16,
      layout: "grey",
      max_abs_difference: 0.05,
      clipped: 2,
      nonfinite: 0,
      psnr_db: 31.5,
      ssim: 0.93,
    };
    const html = renderToStaticMarkup(<ImageOutputs sample={sample} />);
    expect(html.match(/class="zoom-panel" style="width:240px;height:240px"/g)).toHaveLength(3);
    expect(html).toContain("× 16: black = equal, white = 0.0625 or more");
    expect(html).toContain("31.5 dB");
    expect(html).toContain("2 compressed values outside, clipped");
  });
});

describe("SignalPlayback", () => {
  it("offers a player per waveform it has and says when one is not in the file", () => {
    const sample: Extract<TaskSample, { task: "signal" }> = {
      task: "signal",
      job_id: JOB,
      index: 0,
      sample_rate: 8000,
      shape: [1, 400],
      duration_s: 0.05,
      gain: 0.5,
      audio: { golden: "/api/v1/a/golden", compressed: null, clean: null },
      outline: { golden: [[-1, 1]], compressed: [[-0.5, 0.5]], clean: null },
      nonfinite: { golden: 0, compressed: 0 },
      snr_db_vs_golden: 12.25,
      si_sdr_db_vs_golden: null,
      si_sdr_db_golden: null,
      si_sdr_db_compressed: null,
    };
    const html = renderToStaticMarkup(<SignalPlayback sample={sample} />);
    expect(html).not.toContain('data-testid="signal-clean"');
    expect(html).toContain('src="/api/v1/a/golden"');
    expect(html).toContain("past the exported file");
    expect(html).toContain("scaled by 0.5");
    expect(html).toContain("12.25 dB");
    expect(html).toContain("— (identical, or not finite)");
    expect(html).not.toContain("vs clean");
  });
});
