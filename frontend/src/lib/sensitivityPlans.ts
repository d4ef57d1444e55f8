// The whole-model row of a sensitivity job (every layer compressed at once) and its mixed-precision plans:
// rows, CSVs and the plans figure.
import type { Data, Layout } from "plotly.js";
import type { MixedPrecisionPlan, SensitivityReport } from "../api/types";
import type { Cell } from "./csv";
import { formatNumber } from "./format";
import { finite, describeConfig } from "./sensitivity";

// ---------------------------------------------------------------------------------------------------------
// Whole model, plans

export interface WholeModelRow {
  id: string;
  description: string;
  weightBits: number | null;
  klMean: number | null;
  klMax: number | null;
  top1: number | null;
  sqnr: number | null;
  sqnrInfinite: boolean;
}

export function wholeModelRows(report: SensitivityReport): WholeModelRow[] {
  return report.configs
    .filter((c) => c.id in report.whole_model)
    .map((c) => {
      const d = report.whole_model[c.id];
      return {
        id: c.id,
        description: describeConfig(c.config),
        weightBits: c.weight_bits,
        klMean: d?.kl_mean ?? null,
        klMax: d?.kl_max ?? null,
        top1: d?.top1_agreement ?? null,
        sqnr: d?.sqnr_db ?? null,
        sqnrInfinite: d?.sqnr_db_infinite === true,
      };
    });
}

export function wholeModelCsv(rows: WholeModelRow[]): { header: string[]; rows: Cell[][] } {
  return {
    header: ["config", "description", "weight_bits", "kl_mean", "kl_max", "top1_agreement", "sqnr_db"],
    rows: rows.map((r) => [
      r.id,
      r.description,
      r.weightBits,
      r.klMean,
      r.klMax,
      r.top1,
      r.sqnrInfinite ? "inf" : r.sqnr,
    ]),
  };
}

export interface PlanRow {
  averageBits: number;
  budgetBytes: number | null;
  sizeBytes: number | null;
  predictedKl: number | null;
  measuredKl: number | null;
  measuredTop1: number | null;
  measuredSqnr: number | null;
  /** Layer → (configuration id, bits), in the order given. */
  assignments: { layer: string; config: string; bits: number | null }[];
  error: string | null;
  notes: string[];
}

export function planRows(plans: readonly MixedPrecisionPlan[]): PlanRow[] {
  return plans.map((p) => {
    const measured = p.measurement?.measured;
    return {
      averageBits: p.average_bits,
      budgetBytes: finite(p.budget_bytes) ? p.budget_bytes : null,
      sizeBytes: finite(p.size_bytes) ? p.size_bytes : null,
      predictedKl: finite(p.predicted_kl) ? p.predicted_kl : null,
      measuredKl: measured?.kl_mean ?? null,
      measuredTop1: measured?.top1_agreement ?? null,
      measuredSqnr: measured?.sqnr_db ?? null,
      assignments: Object.entries(p.assignments ?? {}).map(([layer, config]) => ({
        layer,
        config,
        bits: p.bits?.[layer] ?? null,
      })),
      error: p.error ?? null,
      notes: [...(p.notes ?? []), ...(p.measurement?.notes ?? [])],
    };
  });
}

export function plansCsv(rows: PlanRow[]): { header: string[]; rows: Cell[][] } {
  return {
    header: [
      "average_bits",
      "budget_bytes",
      "size_bytes",
      "predicted_kl",
      "measured_kl",
      "measured_top1_agreement",
      "measured_sqnr_db",
      "assignments",
      "error",
    ],
    rows: rows.map((r) => [
      r.averageBits,
      r.budgetBytes,
      r.sizeBytes,
      r.predictedKl,
      r.measuredKl,
      r.measuredTop1,
      r.measuredSqnr,
      r.assignments.map((a) => `${a.layer}=${a.config}`).join(" "),
      r.error,
    ]),
  };
}

/** Predicted against measured KL of each plan (grouped bars, log axis). */
export function plansFigure(rows: PlanRow[]): { data: Data[]; layout: Partial<Layout> } {
  const ok = rows.filter((r) => r.error === null);
  const x = ok.map((r) => `${formatNumber(r.averageBits)} bits`);
  const bar = (name: string, y: (number | null)[], color: string): Data => ({
    type: "bar",
    name,
    x,
    y,
    marker: { color },
    hovertemplate: `${name}: %{y:.4g} nats<extra>%{x}</extra>`,
  });
  return {
    data: [
      bar(
        "predicted (Σ of layers alone)",
        ok.map((r) => r.predictedKl),
        "#9ecae9",
      ),
      bar(
        "measured (plan applied)",
        ok.map((r) => r.measuredKl),
        "#4c78a8",
      ),
    ],
    layout: {
      barmode: "group",
      bargap: 0.3,
      xaxis: { title: { text: "average weight bits" }, type: "category" },
      yaxis: { title: { text: "KL mean (nats)" }, rangemode: "tozero", exponentformat: "e" },
      legend: { orientation: "h", y: -0.3 },
      margin: { l: 60, r: 20, t: 10, b: 80 },
    },
  };
}
