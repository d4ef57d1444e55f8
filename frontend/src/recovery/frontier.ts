// Recovered models on a sweep's Pareto chart: each recovery job launched from a sweep point ("recover
// this") becomes a point marked "recovered", joined by a dotted line to the point it recovered. Pure
// functions over the API's typed documents (tested in frontier.test.ts).
//
// Where its numbers come from: the configuration is the unrecovered point's (recovery rewrites float weights,
// the plan stays), so cost objectives (size, compression ratio, parameters, MACs, BOPs) are copied from that
// point; fidelity objectives are the recovery's "after" figures on its held-out split. Latency is not
// measured for a recovered model, so a latency axis leaves it undrawn.
import type { Data } from "plotly.js";
import type { components } from "../client/schema";
import { escapeHtml } from "../lib/sensitivity";
import type { SweepRow } from "../lib/sweep";
import type { Axis } from "../lib/sweepAxes";
import { objectiveInfo } from "../lib/sweepObjectives";
import type { RecoverySummary } from "./recovery";

type Fidelity = components["schemas"]["PointFidelityOut"];

/** Sweep objective → the field of a fidelity summary it is (worker/jobs/sweep.py OBJECTIVE_PATHS). */
export const FIDELITY_OBJECTIVES: Readonly<Record<string, keyof Fidelity>> = {
  kl_mean: "kl_mean",
  js_mean: "js_mean",
  top1_agreement: "top1_agreement",
  sqnr_db: "sqnr_db",
  cosine_mean: "cosine_mean",
  accuracy: "accuracy_compressed",
  accuracy_drop_pp: "accuracy_drop_pp",
  ece: "ece_compressed",
};

/** Objectives the configuration alone decides: the same for the recovered model. */
export const CONFIG_OBJECTIVES: ReadonlySet<string> = new Set([
  "size_bytes",
  "compression_ratio",
  "params_kept",
  "macs",
  "bops",
]);

export const RECOVERED_COLOR = "#2f9e44";

export interface RecoveredPoint {
  /** The recovery job. */
  jobId: string;
  /** The sweep point it recovered ("<sweep job id>:<index>"). */
  pointId: string;
  methods: string[];
  objectives: Record<string, number | null>;
  before: Fidelity;
  after: Fidelity;
  nHeldout: number;
}

const fidelityNumber = (f: Fidelity, key: keyof Fidelity): number | null => {
  const v = f[key];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
};

/** The recovered model of one recovery job as a point with the sweep's objective names. */
export function recoveredPoint(jobId: string, summary: RecoverySummary, unrecovered: SweepRow): RecoveredPoint {
  const objectives: Record<string, number | null> = {};
  for (const name of Object.keys(unrecovered.objectives)) {
    const field = FIDELITY_OBJECTIVES[name];
    objectives[name] =
      field !== undefined
        ? fidelityNumber(summary.after, field)
        : CONFIG_OBJECTIVES.has(name)
          ? (unrecovered.objectives[name] ?? null)
          : null;
  }
  return {
    jobId,
    pointId: unrecovered.id,
    methods: summary.lineage.methods.map((m) => m.name),
    objectives,
    before: summary.before,
    after: summary.after,
    nHeldout: summary.n_heldout,
  };
}

/** The recovered points of the sweep points among `rows` (recoveries of other points are left out). */
export function recoveredOnChart(
  recoveries: readonly { jobId: string; summary: RecoverySummary }[],
  rows: readonly SweepRow[],
): RecoveredPoint[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  return recoveries.flatMap(({ jobId, summary }) => {
    const row = summary.lineage.sweep_point_id ? byId.get(summary.lineage.sweep_point_id) : undefined;
    return row ? [recoveredPoint(jobId, summary, row)] : [];
  });
}

/** The hover text of a recovered point: the axes' numbers, then before → after on the held-out split. */
export function recoveredHover(point: RecoveredPoint, unrecovered: SweepRow, x: Axis, y: Axis): string {
  const kl = (f: Fidelity) => objectiveInfo("kl_mean").format(f.kl_mean);
  const axes = [x, y].map(
    (a) => `<b>${objectiveInfo(a.name).label}: ${objectiveInfo(a.name).format(point.objectives[a.name])}</b>`,
  );
  return [
    `<b>recovered</b> · ${escapeHtml(unrecovered.label)}`,
    `<i>${escapeHtml(point.methods.map((m) => m.replaceAll("_", " ")).join(" → "))}</i>`,
    ...axes,
    `held-out split (${point.nHeldout.toLocaleString("en-US")} samples): KL ${kl(point.before)} → ${kl(point.after)}`,
    `linked to the unrecovered point ${escapeHtml(unrecovered.label)} (its figures: the sweep's samples)`,
    `recovery job ${escapeHtml(point.jobId.slice(0, 8))}`,
  ].join("<br>");
}

/** Two traces: the dotted links (unrecovered → recovered; segments split by nulls) and the recovered markers,
 * and how many recovered points they draw. Points without a number for an axis (at either end) are left
 * out; no trace when nothing is drawable. */
export function recoveredTraces(
  points: readonly RecoveredPoint[],
  rows: readonly SweepRow[],
  x: Axis,
  y: Axis,
): { data: Data[]; drawn: number } {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const drawn = points.flatMap((p) => {
    const from = byId.get(p.pointId);
    if (!from) return [];
    const at = (o: Record<string, number | null>) => ({ x: x.map(o[x.name]), y: y.map(o[y.name]) });
    const start = at(from.objectives);
    const end = at(p.objectives);
    if (start.x === null || start.y === null || end.x === null || end.y === null) return [];
    return [{ p, from, start, end }];
  });
  if (drawn.length === 0) return { data: [], drawn: 0 };
  const data: Data[] = [
    {
      type: "scatter",
      mode: "lines",
      name: "recovered from",
      uid: "recovered-links",
      x: drawn.flatMap((d) => [d.start.x, d.end.x, null]),
      y: drawn.flatMap((d) => [d.start.y, d.end.y, null]),
      line: { color: RECOVERED_COLOR, width: 1.5, dash: "dot" },
      hoverinfo: "skip",
      showlegend: false,
    },
    {
      type: "scatter",
      mode: "markers",
      name: "recovered",
      uid: "recovered",
      x: drawn.map((d) => d.end.x),
      y: drawn.map((d) => d.end.y),
      text: drawn.map((d) => recoveredHover(d.p, d.from, x, y)),
      hovertemplate: "%{text}<extra></extra>",
      marker: { symbol: "diamond", size: 13, color: RECOVERED_COLOR, line: { color: "white", width: 1 } },
    },
  ];
  return { data, drawn: drawn.length };
}
