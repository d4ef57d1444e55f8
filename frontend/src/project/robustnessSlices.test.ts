import { describe, expect, it } from "vitest";
import type { Dataset } from "../api/types";
import { robustnessChoice, sliceOffers, type RobustnessSlice } from "./robustnessSlices";

const dataset = (arrays: Record<string, { shape: number[]; dtype: string }>) => ({ arrays }) as unknown as Dataset;
const offered = (offers: ReturnType<typeof sliceOffers>) => offers.filter((o) => o.why === null).map((o) => o.slice);

describe("sliceOffers", () => {
  it("offers noise and the image corruptions for pictures, the attacks only with a PyTorch model or twin", () => {
    const pictures = dataset({
      images: { shape: [100, 1, 8, 8], dtype: "float32" },
      labels: { shape: [100], dtype: "int64" },
    });
    expect(offered(sliceOffers(pictures, false))).toEqual([
      "gaussian_noise",
      "brightness",
      "contrast",
      "gaussian_blur",
      "occlusion",
      "jpeg",
    ]);
    expect(offered(sliceOffers(pictures, true))).toContain("pgd");
    const why = sliceOffers(pictures, false).find((o) => o.slice === "token_replacement")?.why;
    expect(why).toMatch(/token-id inputs/);
  });

  it("offers token replacement for token ids, not for masks, and no image slices for sequences", () => {
    const text = dataset({
      input_ids: { shape: [20, 16], dtype: "int64" },
      attention_mask: { shape: [20, 16], dtype: "int64" },
    });
    expect(offered(sliceOffers(text, true))).toEqual(["token_replacement"]); // no float input: no attacks
    const masksOnly = dataset({
      attention_mask: { shape: [20, 16], dtype: "int64" },
      token_type_ids: { shape: [20, 16], dtype: "<i8" },
    });
    expect(offered(sliceOffers(masksOnly, false))).toEqual([]);
    const features = dataset({ x: { shape: [50, 12], dtype: "<f4" } });
    expect(offered(sliceOffers(features, false))).toEqual(["gaussian_noise"]);
  });
});

describe("robustnessChoice", () => {
  const offers = sliceOffers(dataset({ images: { shape: [9, 3, 8, 8], dtype: "float32" } }), false);
  const all = new Set<RobustnessSlice>(["gaussian_noise", "jpeg", "pgd"]);

  it("sends only chosen slices that apply, and the chosen severities in order", () => {
    expect(robustnessChoice(offers, all, new Set([3, 1]), false)).toEqual({
      slices: ["gaussian_noise", "jpeg"],
      severities: [1, 3],
    });
  });

  it("says why a choice cannot launch", () => {
    expect(robustnessChoice(offers, new Set(), new Set([1]), false)).toMatch(/at least one robustness slice/);
    expect(robustnessChoice(offers, all, new Set(), false)).toMatch(/at least one severity/);
    expect(robustnessChoice(offers, new Set(), new Set(), true)).toEqual({ slices: [], severities: [1, 2, 3] });
  });
});
