import { describe, expect, it } from "vitest";
import { toRow, type SweepRow } from "./sweep";
import { buildAxis } from "./sweepAxes";
import { frontierLine, labelSide, paretoFigure, runtimeSeries, sweepSeries } from "./sweepChart";
import { FRONTIER, JOB, ROWS, point } from "./sweepFixtures";

/** An axis over the fixture rows' values of one objective (linear or log as the objective prefers). */
const axisOf = (name: string, direction: "min" | "max", side: "x" | "y") =>
  buildAxis(
    name,
    direction,
    null,
    ROWS.map((r) => r.objectives[name]),
    side,
  );

describe("the Pareto figure", () => {
  const x = axisOf("size_bytes", "min", "x");
  const y = axisOf("kl_mean", "min", "y");

  it("joins the frontier points in x order, zeros at the floor", () => {
    const line = frontierLine(FRONTIER, x, y);
    expect(line.x).toEqual([2000, 4000, 16000]);
    expect(line.y[2]).toBeCloseTo(1e-6, 12);
    expect(line.ids).toEqual([`${JOB}:2`, `${JOB}:1`, `${JOB}:0`]);
    expect(frontierLine(null, x, y).x).toEqual([]);
  });

  it("draws every point once, by runtime, with the frontier, knee, slow rings and the selection", () => {
    const fig = paretoFigure({
      series: runtimeSeries(ROWS),
      x,
      y,
      frontier: FRONTIER,
      bounds: [],
      selected: `${JOB}:2`,
      slowBatch: 1,
    });
    const uids = fig.data.map((t) => ("uid" in t ? t.uid : ""));
    expect(uids).toEqual(["frontier", "points-real", "points-simulated", "knee", "slow", "selected"]);
    const points = fig.data.filter((t) => "uid" in t && String(t.uid).startsWith("points-"));
    expect(points.reduce((n, t) => n + (t as { x: unknown[] }).x.length, 0)).toBe(4);
    expect(fig.drawn).toBe(4);
    expect(fig.slow.map((r) => r.label)).toEqual(["w8"]);
    const simulated = fig.data[2] as { marker: { symbol: string }; customdata: string[]; text: string[] };
    expect(simulated.marker.symbol).toBe("diamond-open");
    expect(simulated.customdata).toEqual([`${JOB}:2`]);
    expect(simulated.text[0]).toContain("<b>w4a8</b>");
    expect(simulated.text[0]).toContain("simulated only");
    expect(fig.layout.annotations?.[0]?.text).toBe("knee: w8");
    // On log axes annotations are placed in log10 units.
    expect(fig.layout.annotations?.[0]?.x).toBeCloseTo(Math.log10(4000), 9);
  });

  it("fades the points outside the bounds in a second trace of the same legend entry", () => {
    const fig = paretoFigure({
      series: runtimeSeries(ROWS),
      x,
      y,
      frontier: null,
      bounds: [{ objective: "kl_mean", atMost: 0.001, atLeast: null }],
      selected: null,
      slowBatch: null,
    });
    expect(fig.outside).toBe(2);
    const uids = fig.data.map((t) => ("uid" in t ? t.uid : ""));
    expect(uids).toEqual(["points-real", "points-real-out", "points-simulated-out"]);
    const out = fig.data[1] as { showlegend: boolean; marker: { opacity: number } };
    expect(out.showlegend).toBe(false);
    expect(out.marker.opacity).toBe(0.25);
    expect((fig.data[2] as { showlegend: boolean }).showlegend).toBe(true);
  });

  it("colours several sweeps apart and leaves out points without a value for an axis", () => {
    const other = { ...(ROWS[1] as SweepRow), jobId: "other", id: "other:1" };
    const series = sweepSeries(
      [...ROWS, other],
      [
        { id: JOB, name: "A" },
        { id: "other", name: "B" },
        { id: "none", name: "C" },
      ],
    );
    expect(series.map((s) => [s.name, s.rows.length])).toEqual([
      ["A", 4],
      ["B", 1],
    ]);
    expect(series[0]?.color).not.toBe(series[1]?.color);
    const lat = axisOf("latency_p50_ms_b1", "min", "x");
    const fig = paretoFigure({ series, x: lat, y, frontier: null, bounds: [], selected: null, slowBatch: 1 });
    expect(fig.undrawn.map((r) => r.label)).toEqual(["lowrank"]);
    expect(fig.drawn).toBe(4);
  });
});

describe("the knee's label", () => {
  const x = axisOf("size_bytes", "min", "x");
  const y = axisOf("top1_agreement", "max", "y");

  it("points to the better corner, unless the knee sits at that edge of the chart", () => {
    const [fp32, w8, w4a8] = ROWS as [SweepRow, SweepRow, SweepRow];
    expect(labelSide(x, w8, ROWS, -1)).toBe(-1); // 4 KB: middle of 2..16 KB (log)
    expect(labelSide(x, w4a8, ROWS, -1)).toBe(1); // the smallest: label to the right
    expect(labelSide(y, fp32, ROWS, 1)).toBe(-1); // agreement 1 is the top: label below
    expect(labelSide(y, w4a8, ROWS, 1)).toBe(-1);
    expect(labelSide(y, toRow(point(9, "x", { top1_agreement: 0.9 })), ROWS, 1)).toBe(1);
  });
});
