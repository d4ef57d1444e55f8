import { describe, expect, it } from "vitest";
import { metricCards } from "./metrics";

describe("metricCards", () => {
  it("makes cards of the metrics present, with direction and units", () => {
    const cards = metricCards({
      kl_mean_nats: 0.000105,
      top1_match: 1,
      label_flips: { count: 3, items: [] },
      labels: { top1_accuracy_drop_pp: 0.5, calibration: { ece_shift: 0.00075 } },
      sqnr_db: 42.29,
      cosine_mean: 0.9999720719,
      mse: 0.0083,
    });
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

  it("shows an infinite SQNR and skips missing or null values", () => {
    const cards = metricCards({ sqnr_db: null, sqnr_db_infinite: true, r2: null });
    expect(cards).toHaveLength(1);
    expect(cards[0]?.value).toBe("∞ (identical)");
  });
});
