import { describe, expect, it } from "vitest";
import { fidelityGap, fidelitySource, fidelitySourceLine } from "./fidelitySource";
import { pointFidelity, sweepPointDoc } from "./resultFixtures";

// The text sweep's 4-bit point: the deployed MatMulNBits file leaves the embeddings float, so it measures a
// lower NLL (2.9377) than the simulation (2.9417).
const MEASURED = sweepPointDoc({
  fidelity: pointFidelity({ kl_mean: 0.031, top1_agreement: 0.93, task_metrics: { nll_compressed: 2.9377 } }),
  fidelity_simulated: pointFidelity({
    kl_mean: 0.02,
    top1_agreement: 0.95,
    task_metrics: { nll_compressed: 2.9417 },
  }),
  fidelity_source: "measured",
  fidelity_export_kind: "real-matmulnbits",
  fidelity_note: "measured on the deployed file (real-matmulnbits)",
});

const SIMULATED = sweepPointDoc({
  fidelity: pointFidelity({ kl_mean: 0.5 }),
  fidelity_source: "simulated",
  fidelity_note: "simulated: no runnable export (the simulated file is not a runtime form)",
});

describe("where a point's fidelity comes from", () => {
  it("says measured on the deployed file, with its kind", () => {
    expect(fidelitySource(MEASURED)).toBe("measured");
    expect(fidelitySourceLine(MEASURED)).toBe("measured on the deployed file (real-matmulnbits)");
  });

  it("says simulated, with the worker's short reason", () => {
    expect(fidelitySource(SIMULATED)).toBe("simulated");
    expect(fidelitySourceLine(SIMULATED)).toBe("simulated (no runnable export)");
    const unexported = sweepPointDoc({
      fidelity_source: "simulated",
      fidelity_note: "simulated: the point was not exported",
    });
    expect(fidelitySourceLine(unexported)).toBe("simulated (the point was not exported)");
  });

  it("says nothing for points stored before the field, or without details", () => {
    expect(fidelitySource(sweepPointDoc())).toBeNull();
    expect(fidelitySourceLine(sweepPointDoc())).toBeNull();
    expect(fidelitySourceLine(null)).toBeNull();
  });
});

describe("simulated against measured", () => {
  it("lists each figure both have, with measured − simulated", () => {
    const rows = fidelityGap(MEASURED);
    expect(rows.map((r) => r.label)).toEqual(["KL mean", "Top-1 agreement", "task.nll_compressed"]);
    expect(rows[0]).toEqual({
      label: "KL mean",
      simulated: "0.02 nats",
      measured: "0.031 nats",
      difference: "+0.011 nats",
    });
    expect(rows[1]).toMatchObject({ simulated: "95.00 %", measured: "93.00 %", difference: "-2 pp" });
    expect(rows[2]).toMatchObject({ simulated: "2.942", measured: "2.938", difference: "-0.004" });
  });

  it("is empty for a simulated point", () => {
    expect(fidelityGap(SIMULATED)).toEqual([]);
    expect(fidelityGap(null)).toEqual([]);
  });
});
