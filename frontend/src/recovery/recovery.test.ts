import { describe, expect, it } from "vitest";
import { lineageLine, stepRows, type RecoverySummary } from "./recovery";

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
