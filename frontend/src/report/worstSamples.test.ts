import { describe, expect, it } from "vitest";
import type { FidelityRobustness } from "./robustness";
import {
  cleanPictureUrl,
  corruptedPictureUrl,
  defaultPointKey,
  pickedIn,
  pointKey,
  pointOf,
  predictionText,
} from "./worstSamples";

const worst = (sample_index: number, image: boolean) => ({
  sample_index,
  divergence: 1 / (sample_index + 1),
  golden_class: 1,
  compressed_class: 2,
  label: 1,
  image,
});

const point = (severity: number, indices: number[]) => ({
  severity,
  severity_name: "",
  value: severity / 10,
  n_samples: 10,
  n_finite: 10,
  kl_mean_nats: 0.1,
  mse_mean: 0.1,
  cosine_mean: 0.9,
  top1_agreement: 0.9,
  golden_accuracy: null,
  compressed_accuracy: null,
  brittleness_ratio: null,
  worst_samples: indices.map((i) => worst(i, true)),
  warnings: [],
});

const doc = {
  slices: [
    { name: "gaussian_noise", parameter: "", target: "float", points: [point(1, [4, 2]), point(3, [7, 4])] },
    { name: "fgsm", parameter: "", target: "gradient", points: [point(2, [9])] },
  ],
} as unknown as FidelityRobustness;

describe("worst samples", () => {
  it("starts on the first slice's most severe point and finds points by key", () => {
    expect(defaultPointKey(doc)).toBe("gaussian_noise:3");
    expect(defaultPointKey({ ...doc, slices: [] })).toBe("");
    expect(pointOf(doc, pointKey("fgsm", 2))?.point.worst_samples.map((w) => w.sample_index)).toEqual([9]);
    expect(pointOf(doc, "fgsm:2")?.slice).toBe("fgsm");
    expect(pointOf(doc, "fgsm:3")).toBeNull();
    expect(pointOf(doc, "nothing")).toBeNull();
  });

  it("keeps a pick only while it is one of the point's worst samples", () => {
    const severe = pointOf(doc, "gaussian_noise:3")?.point;
    expect(pickedIn(severe, 4)?.sample_index).toBe(4);
    expect(pickedIn(severe, 2)).toBeNull(); // a worst sample of the mild point only
    expect(pickedIn(severe, null)).toBeNull();
    expect(pickedIn(undefined, 4)).toBeNull();
  });

  it("builds the API's picture URLs", () => {
    expect(corruptedPictureUrl("j 1", "gaussian_blur", 3, 12)).toBe(
      "/api/v1/jobs/j%201/robustness/gaussian_blur/3/samples/12.png",
    );
    expect(cleanPictureUrl("j", 12)).toBe("/api/v1/jobs/j/samples/12/input.png");
  });

  it("says when the two models disagree", () => {
    expect(predictionText(3, 3)).toBe("golden 3, compressed 3");
    expect(predictionText(3, 5)).toBe("golden 3, compressed 5 (they disagree)");
    expect(predictionText(null, 5)).toBe("golden —, compressed 5");
  });
});
