import { describe, expect, it } from "vitest";
import { lineageLine, stepRows, taskRows, type RecoverySummary } from "./recovery";

const fidelity = (kl: number, top1: number, accuracy: number | null) =>
  ({ kl_mean: kl, top1_agreement: top1, accuracy_compressed: accuracy }) as RecoverySummary["before"];

const summary = {
  before: fidelity(0.004, 0.95, 0.9),
  after: fidelity(0.001, 0.99, 0.95),
  steps: [
    { method: "before", seconds: 0, fidelity: fidelity(0.004, 0.95, 0.9), details: {} },
    { method: "adaround", seconds: 1.5, fidelity: fidelity(0.002, 0.97, 0.92), details: {} },
    { method: "bias_correction", seconds: 0.25, fidelity: fidelity(0.001, 0.99, null), details: {} },
  ],
} as unknown as RecoverySummary;

describe("stepRows", () => {
  it("gives each step's KL as a ratio of the unrecovered model's", () => {
    const rows = stepRows(summary);
    expect(rows.map((r) => r.method)).toEqual(["compressed (no recovery)", "adaround", "bias correction"]);
    expect(rows.map((r) => r.klRatio)).toEqual(["1.00×", "0.50×", "0.25×"]);
    expect(rows[0]?.seconds).toBe("—");
    expect(rows[1]?.seconds).toBe("1.50 s");
    expect(rows[2]?.accuracy).toBe("—");
  });
});

describe("lineageLine", () => {
  it("reads golden → configuration → methods", () => {
    const line = lineageLine({
      point_id: "w4-sym-channel",
      methods: [{ name: "adaround" }, { name: "bias_correction" }],
    } as unknown as Parameters<typeof lineageLine>[0]);
    expect(line).toEqual(["golden", "w4-sym-channel", "adaround, bias correction"]);
  });
});

describe("taskRows", () => {
  it("says which way recovery moved each task metric, by its direction", () => {
    const withTask = {
      ...summary,
      task: {
        task: "segmentation",
        metrics: [
          { metric: "miou_vs_golden", before: 0.8, after: 0.9, higher_is_better: true },
          { metric: "miou_drop", before: 0.05, after: 0.07, higher_is_better: false },
          { metric: "pixel_agreement", before: 0.9, after: 0.9, higher_is_better: true },
          { metric: "boundary_f1_drop", before: null, after: 0.1, higher_is_better: false },
        ],
      },
    } as unknown as RecoverySummary;
    expect(taskRows(withTask).map((r) => [r.metric, r.verdict])).toEqual([
      ["miou_vs_golden", "better"],
      ["miou_drop", "worse"],
      ["pixel_agreement", "same"],
      ["boundary_f1_drop", null],
    ]);
    expect(taskRows(summary)).toEqual([]);
  });
});
