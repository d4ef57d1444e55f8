import { describe, expect, it } from "vitest";
import type { MixedPrecisionPlan } from "../api/types";
import { planRows, plansCsv, wholeModelRows } from "./sensitivityPlans";
import { divergence } from "./resultFixtures";
import { REPORT } from "./sensitivityFixtures";

describe("whole model and plans", () => {
  it("lists the configurations measured on the whole model", () => {
    const rows = wholeModelRows(REPORT);
    expect(rows.map((r) => r.id)).toEqual(["w8-sym-tensor", "fp16"]);
    expect(rows[1]).toMatchObject({ klMean: 0, sqnr: null, sqnrInfinite: true, weightBits: 16 });
  });

  it("reads predicted and measured KL, and failed plans", () => {
    const plans: MixedPrecisionPlan[] = [
      {
        average_bits: 5,
        budget_bytes: 2365,
        assignments: { conv1: "fp16", conv2: "w4-sym-tensor", fc: "w4-sym-tensor" },
        bits: { conv1: 16, conv2: 4, fc: 4 },
        predicted_kl: 0.007,
        size_bytes: 2000,
        measurement: {
          predicted_kl: 0.007,
          measured: divergence({ kl_mean: 0.0063, top1_agreement: 1, sqnr_db: 22.3 }),
          notes: [],
        },
        error: null,
        notes: [],
      },
      { average_bits: 2, error: "no plan fits 2 bits" },
    ];
    const rows = planRows(plans);
    expect(rows[0]).toMatchObject({ predictedKl: 0.007, measuredKl: 0.0063, measuredTop1: 1, measuredSqnr: 22.3 });
    expect(rows[0]?.assignments[0]).toEqual({ layer: "conv1", config: "fp16", bits: 16 });
    expect(rows[1]).toMatchObject({ error: "no plan fits 2 bits", predictedKl: null, assignments: [] });
    const csv = plansCsv(rows);
    expect(csv.rows[0]?.[7]).toBe("conv1=fp16 conv2=w4-sym-tensor fc=w4-sym-tensor");
    expect(csv.rows[1]?.[8]).toBe("no plan fits 2 bits");
  });
});
