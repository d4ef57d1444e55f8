import { describe, expect, it } from "vitest";
import type { FidelityRobustness } from "./robustness";
import {
  cleanPictureUrl,
  corruptedPictureUrl,
  defaultPointKey,
  labelSentence,
  oodPicture,
  pickedAmong,
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

  it("keeps an out-of-distribution pick only while it is one of the rows", () => {
    const rows = [worst(5, false), worst(1, false)];
    expect(pickedAmong(rows, 1)).toBe(rows[1]);
    expect(pickedAmong(rows, 2)).toBeNull();
    expect(pickedAmong(rows, null)).toBeNull();
    expect(pickedAmong([], 5)).toBeNull();
  });

  it("says the label when there is one", () => {
    expect(labelSentence(0)).toBe("Label 0. ");
    expect(labelSentence(null)).toBe("");
  });
});

describe("out-of-distribution picture", () => {
  const id = "0b7c4e1e-5d3a-4f0e-9a7e-2c1d3b4a5f60";

  it("draws an image row from the dataset preview's thumbnail route", () => {
    // GET /api/v1/datasets/{dataset_id}/samples/{index}/thumbnail.png (getDatasetSampleThumbnail)
    expect(oodPicture(id, 17, false, { image: true, error: null }, null)).toEqual({
      kind: "picture",
      src: `/api/v1/datasets/${id}/samples/17/thumbnail.png`,
    });
  });

  it("says why there is no picture instead of a broken image", () => {
    const why = (o: ReturnType<typeof oodPicture>): string => (o.kind === "none" ? o.why : "picture");
    expect(why(oodPicture(id, 3, false, { image: false }, null))).toMatch(/not images/);
    expect(why(oodPicture(id, 3, false, { image: true, error: "image too large to decode" }, null))).toBe(
      "No picture: image too large to decode",
    );
    expect(why(oodPicture(id, 3, false, null, null))).toMatch(/no row 3/);
    expect(why(oodPicture(id, 3, false, undefined, "503 busy"))).toMatch(/could not be read \(503 busy\)/);
    const loading = oodPicture(id, 3, false, undefined, null);
    expect(loading.kind === "none" && loading.loading).toBe(true);
  });

  it("says so in an exported report, whatever the preview", () => {
    for (const row of [undefined, null, { image: true }]) {
      const o = oodPicture(id, 3, true, row, null);
      expect(o.kind === "none" && !o.loading && /not embedded in an exported report/.test(o.why)).toBe(true);
    }
  });
});
