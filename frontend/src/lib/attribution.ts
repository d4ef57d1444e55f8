// Cause attribution of a sweep point whose configuration chains several techniques (a schedule, or a
// quantize with weights and activations): how much of the divergence each technique causes. The point's
// document carries the fidelity figure (mean KL in nats for classifiers, else MSE) of every technique alone,
// of the techniques applied in order (0..i), and of every technique but one; this module turns those into the
// waterfall's steps, the table's rows, the CSV and a one-sentence summary. A missing value stays missing
// (never drawn or summed as 0).
import type { Layout, PlotData } from "plotly.js";
import type { components } from "../client/schema";
import type { Cell } from "./csv";
import { formatNumber, formatPercent } from "./format";

// The API's PointAttributionOut (GET /jobs/{id}/sweep/points/{index} → point.attribution).
export type PointAttribution = components["schemas"]["PointAttributionOut"];

type Evaluation = PointAttribution["evaluations"][number];

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const at = (values: readonly (number | null)[], i: number): number | null => {
  const v = values[i];
  return finite(v) ? v : null;
};
const minus = (a: number | null, b: number | null): number | null => (a !== null && b !== null ? a - b : null);

/** The y axis title: "mean KL (nats)" or "MSE". */
export const metricTitle = (a: PointAttribution): string => (a.metric === "kl_mean" ? "mean KL (nats)" : "MSE");

/** A value with its unit: "0.0123 nats" (KL) or "0.0123" (MSE); "—" when missing. */
export function formatMetric(a: PointAttribution, v: number | null | undefined): string {
  if (!finite(v)) return "—";
  return a.metric === "kl_mean" ? `${formatNumber(v)} nats` : formatNumber(v);
}

// ---------------------------------------------------------------------------------------------------------
// Waterfall

export interface WaterfallStep {
  /** "1. prune 50 %" (numbered, so that equal labels stay distinct categories), or "total". */
  label: string;
  kind: "step" | "total";
  /** Where the bar starts: the previous cumulative value (0 for the first step and the total). */
  base: number | null;
  /** What the step adds (negative: it lowers the divergence); for the total, the total. */
  delta: number | null;
  /** Where the bar ends: the cumulative value after the step (the total). */
  end: number | null;
  /** No value for the step (its start or end is missing): not drawn. */
  missing: boolean;
}

export function waterfallSteps(a: PointAttribution): WaterfallStep[] {
  const steps = a.techniques.map((t, i): WaterfallStep => {
    const base = i === 0 ? 0 : at(a.cumulative, i - 1);
    const end = at(a.cumulative, i);
    const delta = minus(end, base);
    return { label: `${String(i + 1)}. ${t.label}`, kind: "step", base, delta, end, missing: delta === null };
  });
  const total = finite(a.total) ? a.total : null;
  return [...steps, { label: "total", kind: "total", base: 0, delta: total, end: total, missing: total === null }];
}

/** A bar trace with `base` (where each bar starts), which @types/plotly.js leaves out. */
export type BarWithBase = Partial<PlotData> & { base: (number | null)[] };

const COLORS = { up: "#e45756", down: "#54a24b", total: "#4c78a8" };

/** Bar traces with `base` (the bundle has no waterfall trace): increasing steps red, decreasing green, total blue. */
export function waterfallFigure(a: PointAttribution): { data: BarWithBase[]; layout: Partial<Layout> } {
  const steps = waterfallSteps(a);
  const unit = a.metric === "kl_mean" ? " nats" : "";
  const bar = (name: string, color: string, chosen: WaterfallStep[], hover: string): BarWithBase => ({
    type: "bar",
    name,
    x: chosen.map((s) => s.label),
    y: chosen.map((s) => s.delta),
    base: chosen.map((s) => s.base),
    customdata: chosen.map((s) => [s.delta, s.end]),
    marker: { color },
    hovertemplate: `%{x}<br>${hover}<extra></extra>`,
  });
  const drawn = steps.filter((s) => !s.missing && s.kind === "step");
  const total = steps.filter((s) => !s.missing && s.kind === "total");
  const stepHover = `step: %{customdata[0]:+.4g}${unit}<br>cumulative: %{customdata[1]:.4g}${unit}`;
  return {
    data: [
      bar(
        "adds divergence",
        COLORS.up,
        drawn.filter((s) => (s.delta ?? 0) >= 0),
        stepHover,
      ),
      bar(
        "removes divergence",
        COLORS.down,
        drawn.filter((s) => (s.delta ?? 0) < 0),
        stepHover,
      ),
      bar("total", COLORS.total, total, `total: %{customdata[1]:.4g}${unit}`),
    ],
    layout: {
      bargap: 0.3,
      barmode: "overlay",
      showlegend: true,
      xaxis: { type: "category", categoryorder: "array", categoryarray: steps.map((s) => s.label) },
      yaxis: { title: { text: metricTitle(a) }, rangemode: "tozero", exponentformat: "e" },
      legend: { orientation: "h", y: -0.3 },
      margin: { l: 70, r: 20, t: 10, b: 90 },
      annotations: steps
        .filter((s) => s.missing)
        .map((s) => ({ x: s.label, y: 0, yanchor: "bottom", text: "no value", showarrow: false })),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Table, CSV and summary

export interface AttributionRow {
  label: string;
  /** The technique applied on its own. */
  alone: number | null;
  /** What it adds applied after the ones before it (the waterfall's step). */
  added: number | null;
  /** total − every technique but this one: the divergence that goes away when only it is left out. */
  removed: number | null;
  /** removed / total (null when the total is missing or not positive). */
  removedShare: number | null;
}

export function attributionRows(a: PointAttribution): AttributionRow[] {
  const total = finite(a.total) ? a.total : null;
  const steps = waterfallSteps(a);
  return a.techniques.map((t, i) => {
    const removed = minus(total, at(a.leave_one_out, i));
    return {
      label: t.label,
      alone: at(a.alone, i),
      added: steps[i]?.delta ?? null,
      removed,
      removedShare: removed !== null && total !== null && total > 0 ? removed / total : null,
    };
  });
}

/** One row per technique in order, then the total and the interaction (total − Σ alone, in added_in_order). */
export function attributionCsv(a: PointAttribution): { header: string[]; rows: Cell[][] } {
  const rows = attributionRows(a);
  return {
    header: [
      "metric",
      "step",
      "technique",
      "alone",
      "cumulative",
      "added_in_order",
      "leave_one_out",
      "removed_when_left_out",
      "removed_share",
    ],
    rows: [
      ...rows.map((r, i): Cell[] => [
        a.metric,
        i + 1,
        r.label,
        r.alone,
        at(a.cumulative, i),
        r.added,
        at(a.leave_one_out, i),
        r.removed,
        r.removedShare,
      ]),
      [a.metric, "total", "all techniques", null, a.total, null, null, null, null],
      [a.metric, "interaction", "total − sum of alone", null, null, a.interaction, null, null, null],
    ],
  };
}

/**
 * "Leaving out prune 50 % removes 83 % of the divergence; the techniques compound (together 0.012 nats more
 * than the sum of each alone)." The technique is the one whose leaving out removes the most.
 */
export function attributionSummary(a: PointAttribution): string {
  let best: AttributionRow | null = null;
  for (const r of attributionRows(a)) if (r.removed !== null && (best?.removed ?? -Infinity) < r.removed) best = r;
  const lead =
    best === null || best.removed === null
      ? "No leave-one-out value was measured"
      : best.removed <= 0
        ? "Leaving out any one technique does not lower the divergence"
        : `Leaving out ${best.label} removes ${
            best.removedShare !== null ? formatPercent(best.removedShare, 0) : formatMetric(a, best.removed)
          } of the divergence`;
  const i = finite(a.interaction) ? a.interaction : null;
  const how =
    i === null
      ? ""
      : i > 0
        ? `; the techniques compound (together ${formatMetric(a, i)} more than the sum of each alone)`
        : i < 0
          ? `; the techniques overlap (together ${formatMetric(a, -i)} less than the sum of each alone)`
          : "; the techniques add up exactly (together the sum of each alone)";
  return `${lead}${how}.`;
}

/** The subsets the attribution measured ("prune 50 % + int8 weights") with their fidelity. */
export function evaluationRows(a: PointAttribution): { techniques: string; fidelity: Evaluation["fidelity"] }[] {
  return a.evaluations.map((e) => ({
    techniques: e.techniques.map((i) => a.techniques[i]?.label ?? `#${String(i)}`).join(" + ") || "none",
    fidelity: e.fidelity,
  }));
}
