import { describe, expect, it } from "vitest";
import { toRow, type SweepRow } from "../lib/sweep";
import { buildAxis } from "../lib/sweepAxes";
import { JOB, ROWS, point } from "../lib/sweepFixtures";
import { recoveredOnChart, recoveredPoint, recoveredTraces } from "./frontier";
import type { RecoverySummary } from "./recovery";

const W4A8 = ROWS[2] as SweepRow; // kl 0.004, size 2000, top-1 0.99, latency 0.8 ms

/** A stored recovery summary of the point `pointId` (only the fields the chart reads). */
function summary(pointId: string | null, after: Record<string, number | null>, methods: string[]): RecoverySummary {
  return {
    before: { kl_mean: 0.005, top1_agreement: 0.985, accuracy_compressed: 0.95, n_samples: 360 },
    after: { n_samples: 360, ...after },
    n_heldout: 360,
    lineage: { sweep_point_id: pointId, methods: methods.map((name) => ({ name })) },
  } as unknown as RecoverySummary;
}

const axis = (name: string, direction: "min" | "max", side: "x" | "y", extra: (number | null)[] = []) =>
  buildAxis(name, direction, null, [...ROWS.map((r) => r.objectives[name]), ...extra], side);

describe("recoveredPoint", () => {
  it("takes fidelity objectives from the recovery's after, cost from the point, no latency", () => {
    const row = toRow(
      point(5, "w4", {
        kl_mean: 0.02,
        accuracy: 0.9,
        ece: 0.05,
        size_bytes: 1000,
        bops: 123,
        latency_p50_ms_b1: 0.7,
      }),
    );
    const p = recoveredPoint(
      "job-r",
      summary(row.id, { kl_mean: 0.001, accuracy_compressed: 0.96, ece_compressed: 0.02 }, ["adaround"]),
      row,
    );
    expect(p.objectives).toEqual({
      kl_mean: 0.001,
      accuracy: 0.96,
      ece: 0.02,
      size_bytes: 1000,
      bops: 123,
      latency_p50_ms_b1: null,
    });
    expect(p.pointId).toBe(`${JOB}:5`);
    expect(p.methods).toEqual(["adaround"]);
  });
});

describe("recoveredOnChart", () => {
  it("keeps recoveries of the chart's points only", () => {
    const recoveries = [
      { jobId: "a", summary: summary(W4A8.id, { kl_mean: 0.001 }, ["bias_correction"]) },
      { jobId: "b", summary: summary(`${JOB}:99`, { kl_mean: 0.001 }, ["bias_correction"]) },
      { jobId: "c", summary: summary(null, { kl_mean: 0.001 }, ["bias_correction"]) },
    ];
    expect(recoveredOnChart(recoveries, ROWS).map((p) => p.jobId)).toEqual(["a"]);
  });
});

describe("recoveredTraces", () => {
  const recovered = recoveredOnChart(
    [
      {
        jobId: "r1",
        summary: summary(W4A8.id, { kl_mean: 0.0008, top1_agreement: 0.997 }, ["equalization", "bias_correction"]),
      },
      { jobId: "r2", summary: summary((ROWS[3] as SweepRow).id, { kl_mean: 0.1, top1_agreement: 0.95 }, ["qat"]) },
    ],
    ROWS,
  );

  it("links each recovered point to its unrecovered one and marks it", () => {
    const x = axis("size_bytes", "min", "x");
    const y = axis("top1_agreement", "max", "y", [0.997, 0.95]);
    const { data, drawn } = recoveredTraces(recovered, ROWS, x, y);
    const [links, markers, ...rest] = data;
    expect(rest).toEqual([]);
    expect(drawn).toBe(2);
    // unrecovered (2000 B, 0.99) → recovered (same size, 0.997); lowrank (8000 B, 0.88) → (8000 B, 0.95)
    expect(links).toMatchObject({ mode: "lines", x: [2000, 2000, null, 8000, 8000, null] });
    expect((links as { y: unknown[] }).y).toEqual([0.99, 0.997, null, 0.88, 0.95, null]);
    expect(markers).toMatchObject({ name: "recovered", mode: "markers", x: [2000, 8000], y: [0.997, 0.95] });
    const hover = (markers as { text: string[] }).text[0] ?? "";
    expect(hover).toContain("recovered");
    expect(hover).toContain("w4a8");
    expect(hover).toContain("equalization → bias correction");
    expect(hover).toContain("held-out split (360 samples): KL 0.005 nats → 8e-4 nats");
  });

  it("leaves out points without a value for an axis (latency is not measured after recovery)", () => {
    const x = axis("latency_p50_ms_b1", "min", "x");
    const y = axis("kl_mean", "min", "y");
    expect(recoveredTraces(recovered, ROWS, x, y)).toEqual({ data: [], drawn: 0 });
  });
});
