import { describe, expect, it } from "vitest";
import type { SensitivityReport } from "../api/types";
import { layerIsExact, screeningSummary } from "./screening";

function report(extra: Partial<SensitivityReport>): SensitivityReport {
  return {
    matrix: {
      rows: ["a", "b"],
      columns: ["w8", "w4"],
      kl_mean: [],
      top1_agreement: [],
      sqnr_db: [],
      exact: [
        [true, true],
        [false, true],
      ],
    },
    ...extra,
  } as unknown as SensitivityReport;
}

describe("screening marks", () => {
  it("says a layer is exact only where its cells were measured", () => {
    const r = report({});
    expect(layerIsExact(r, "a", null)).toBe(true);
    expect(layerIsExact(r, "b", null)).toBe(false);
    expect(layerIsExact(r, "b", "w8")).toBe(false);
    expect(layerIsExact(r, "b", "w4")).toBe(true);
  });

  it("treats reports made before screening as exact and states the screened count", () => {
    const old = report({});
    delete (old.matrix as { exact?: unknown }).exact;
    expect(layerIsExact(old, "b", null)).toBe(true);
    expect(screeningSummary(old)).toBeNull();
    const screened = report({
      screening: {
        top_k: 1,
        control: 1,
        seed: 0,
        top_layers: ["a"],
        control_layers: [],
        exact_cells: 3,
        total_cells: 4,
        spearman: 0.875,
      },
    });
    expect(screeningSummary(screened)).toBe(
      "3 of 4 cells measured exactly (top 1 layers by estimate, 0 random controls; Spearman ρ of estimate vs exact on them 0.88); the others are estimated",
    );
  });
});
