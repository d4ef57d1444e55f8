import { describe, expect, it } from "vitest";
import {
  AGREEMENT,
  confusionColours,
  confusionView,
  damageBars,
  noDamage,
  rowShares,
  type OutputClasses,
} from "./diagnostics";

const cells: [number, number, number][] = [
  [0, 0, 5],
  [0, 2, 3],
  [1, 1, 4],
  [2, 2, 6],
  [3, 1, 2],
];

describe("confusionView", () => {
  it("builds the dense matrix of every class when they fit", () => {
    const view = confusionView(cells, [3, 0, 2, 1]);
    expect(view.classes).toEqual([0, 1, 2, 3]);
    expect(view.counts).toEqual([
      [5, 0, 3, 0],
      [0, 4, 0, 0],
      [0, 0, 6, 0],
      [0, 2, 0, 0],
    ]);
    expect(view.total).toBe(20);
    expect(view.hidden).toBe(0);
  });

  it("keeps the most damaged classes and counts what it leaves out", () => {
    const view = confusionView(cells, [3, 0, 2, 1], 2);
    expect(view.classes).toEqual([0, 3]); // 3 and 0 are the most damaged, shown in index order
    expect(view.counts).toEqual([
      [5, 0],
      [0, 0],
    ]);
    expect(view.hidden).toBe(20 - 5);
  });
});

describe("rowShares", () => {
  it("divides by the row sum and leaves empty rows at zero", () => {
    expect(
      rowShares([
        [1, 3],
        [0, 0],
      ]),
    ).toEqual([
      [0.25, 0.75],
      [0, 0],
    ]);
  });
});

describe("confusionColours", () => {
  it("greys the diagonal, whitens cells without flips and darkens the worst flip most", () => {
    expect(
      confusionColours([
        [90, 10, 0],
        [20, 80, 0],
        [0, 0, 50],
      ]),
    ).toEqual([
      [AGREEMENT, 0.5, 0],
      [1, AGREEMENT, 0],
      [0, 0, AGREEMENT],
    ]);
  });
  it("leaves every off-diagonal cell white when nothing flipped", () => {
    expect(
      confusionColours([
        [3, 0],
        [0, 4],
      ]),
    ).toEqual([
      [AGREEMENT, 0],
      [0, AGREEMENT],
    ]);
  });
});

describe("noDamage", () => {
  it("is true only when no bar is above zero", () => {
    expect(
      noDamage([
        { label: "class 0", value: 0 },
        { label: "class 1", value: -0.5 },
      ]),
    ).toBe(true);
    expect(noDamage([{ label: "class 0", value: 0.1 }])).toBe(false);
  });
});

describe("damageBars", () => {
  const base = {
    num_classes: 3,
    n_samples: 10,
    flip_confidence: 0.9,
    confusion: { rows: "", columns: "", cells: [] },
    confident_flips: { count: 0, stored: 0, capped: false, items: [] },
    task: null,
  };
  const row = (k: number, drop: number | null, agreement: number) => ({
    class_index: k,
    n: 5,
    kl_mean_nats: 0.1,
    top1_agreement: agreement,
    golden_accuracy: null,
    compressed_accuracy: null,
    accuracy_drop_pp: drop,
    confident_flips: 0,
  });

  it("uses the accuracy drop with labels", () => {
    const out = { ...base, by: "label", classes: [row(2, 12.5, 0.8), row(0, 0, 1)] } as OutputClasses;
    expect(damageBars(out)).toEqual({
      measure: "accuracy drop (pp)",
      bars: [
        { label: "class 2", value: 12.5 },
        { label: "class 0", value: 0 },
      ],
    });
  });

  it("uses the disagreement without labels", () => {
    const out = { ...base, by: "golden_prediction", classes: [row(1, null, 0.75)] } as OutputClasses;
    expect(damageBars(out).bars).toEqual([{ label: "class 1", value: 25 }]);
    expect(damageBars(out).measure).toBe("disagreement with golden (%)");
  });
});
