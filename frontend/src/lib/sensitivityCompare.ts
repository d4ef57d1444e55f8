// Sensitivity profiles of several scans side by side (GET /sensitivity-profiles): each layer's score for one
// configuration against its normalised depth (0 = first layer, 1 = last), one line per scan, and the mean
// score per layer type as grouped bars. Scores are KL means (log axis) or −SQNR (drawn as SQNR on a reversed
// axis, so that up is always more damage). Scans ranked by different metrics cannot share an axis: only
// those ranked like the first are drawn.
import type { Data, Layout } from "plotly.js";
import type { SensitivityProfile } from "../api/types";
import type { Cell } from "./csv";
import { formatNumber } from "./format";
import { escapeHtml, metricOf, type Metric } from "./sensitivity";

export const PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#9d755d"];

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

export interface ProfileSelection {
  metric: Metric;
  /** The profiles drawn (those ranked like the first). */
  drawn: SensitivityProfile[];
  /** Profiles left out: ranked by another metric. */
  excluded: SensitivityProfile[];
}

export function selectProfiles(profiles: readonly SensitivityProfile[]): ProfileSelection {
  const metric = metricOf(profiles[0]?.ranking_metric ?? "kl");
  return {
    metric,
    drawn: profiles.filter((p) => metricOf(p.ranking_metric) === metric),
    excluded: profiles.filter((p) => metricOf(p.ranking_metric) !== metric),
  };
}

/** What a score is drawn as: KL (nats, only positive on the log axis) or the SQNR (dB) behind −SQNR. */
export function plotted(metric: Metric, score: number | null | undefined): number | null {
  if (!finite(score)) return null;
  if (metric === "kl") return score > 0 ? score : null;
  return -score;
}

/** Ticks of a log axis over these values: one per decade when they span two decades or more, else 1-2-5 in
 * each decade ("D2"), so a profile within one decade still gets several labelled ticks (it had one: 10⁻⁵). */
export function logTicks(values: readonly (number | null)[]): 1 | "D2" {
  const positive = values.filter((v): v is number => v !== null && v > 0);
  if (positive.length === 0) return 1;
  const span = Math.log10(Math.max(...positive)) - Math.log10(Math.min(...positive));
  return span >= 2 ? 1 : "D2";
}

function yAxis(metric: Metric, values: readonly (number | null)[]): Partial<Layout["yaxis"]> {
  return metric === "kl"
    ? // Decade ticks written as powers of ten (10⁻⁵), not Plotly's in-between "0.4e−5" labels.
      {
        title: { text: "KL mean (nats, log scale)" },
        type: "log",
        dtick: logTicks(values),
        exponentformat: "power",
        automargin: true,
      }
    : { title: { text: "SQNR (dB), reversed: up = more damage" }, autorange: "reversed", automargin: true };
}

const unit = (metric: Metric) => (metric === "kl" ? " nats" : " dB");

/** A scan's legend name: its model and the first characters of its job id (two scans of one model differ). */
export function profileLabel(profile: SensitivityProfile): string {
  return `${profile.model_name ?? "(deleted model)"} · ${profile.job_id.slice(0, 6)}`;
}

/** Values that could not be drawn: missing, or a KL of 0 (no place on a log axis). */
export function countUndrawn(profiles: readonly SensitivityProfile[], config: string, metric: Metric): number {
  return profiles.flatMap((p) => p.layers.map((l) => l.scores[config])).filter((v) => plotted(metric, v) === null)
    .length;
}

/** Score against normalised depth, one line per scan. */
export function profileFigure(
  profiles: readonly SensitivityProfile[],
  config: string,
  metric: Metric,
): { data: Data[]; layout: Partial<Layout> } {
  const data: Data[] = profiles.map((p, k) => ({
    type: "scatter",
    mode: p.layers.length > 200 ? "lines" : "lines+markers",
    name: profileLabel(p),
    x: p.layers.map((l) => l.depth_fraction),
    y: p.layers.map((l) => plotted(metric, l.scores[config])),
    text: p.layers.map((l) => `<b>${escapeHtml(l.name)}</b> (${escapeHtml(l.type)})`),
    hovertemplate: `%{text}<br>depth %{x:.3f}<br>%{y:.4g}${unit(metric)}<extra>${escapeHtml(profileLabel(p))}</extra>`,
    line: { color: PALETTE[k % PALETTE.length], width: 2 },
    marker: { size: 6 },
    connectgaps: false,
  }));
  return {
    data,
    layout: {
      xaxis: { title: { text: "normalised depth (0 = first layer, 1 = last)" }, range: [-0.03, 1.03], zeroline: false },
      yaxis: yAxis(
        metric,
        profiles.flatMap((p) => p.layers.map((l) => plotted(metric, l.scores[config]))),
      ),
      legend: { orientation: "h", y: -0.25 },
      margin: { l: 70, r: 20, t: 10, b: 90 },
      hovermode: "closest",
    },
  };
}

/** Layer types in the order they first appear, over every scan. */
export function layerTypes(profiles: readonly SensitivityProfile[]): string[] {
  const seen = new Set<string>();
  for (const p of profiles) for (const l of p.layers) seen.add(l.type);
  for (const p of profiles) for (const t of Object.keys(p.by_type)) seen.add(t);
  return [...seen];
}

/** Mean score per layer type, one group of bars per type, one bar per scan. */
export function byTypeFigure(
  profiles: readonly SensitivityProfile[],
  config: string,
  metric: Metric,
): { data: Data[]; layout: Partial<Layout> } {
  const types = layerTypes(profiles);
  const data: Data[] = profiles.map((p, k) => ({
    type: "bar",
    name: profileLabel(p),
    x: types,
    y: types.map((t) => plotted(metric, p.by_type[t]?.[config])),
    customdata: types.map((t) => p.layer_counts[t] ?? 0),
    hovertemplate: `%{x}: %{y:.4g}${unit(metric)} (mean of %{customdata} layers)<extra>${escapeHtml(profileLabel(p))}</extra>`,
    marker: { color: PALETTE[k % PALETTE.length] },
  }));
  return {
    data,
    layout: {
      barmode: "group",
      bargap: 0.25,
      xaxis: { title: { text: "layer type" }, type: "category" },
      // Bars on a linear axis from 0: their heights compare as ratios (on a log axis from 1e-5, 2× looked
      // like 20×).
      yaxis:
        metric === "kl"
          ? {
              title: { text: "mean KL (nats)" },
              type: "linear",
              rangemode: "tozero",
              tickformat: ".2~g",
              automargin: true, // the title clear of the tick labels
            }
          : { title: { text: "mean −SQNR (dB): higher = more damage" }, automargin: true },
      legend: { orientation: "h", y: -0.3 },
      margin: { l: 70, r: 20, t: 10, b: 90 },
    },
  };
}

export function profilesCsv(
  profiles: readonly SensitivityProfile[],
  config: string,
): { header: string[]; rows: Cell[][] } {
  return {
    header: ["job_id", "model", "ranking_metric", "layer", "type", "depth_fraction", "config", "score"],
    rows: profiles.flatMap((p) =>
      p.layers.map((l) => [
        p.job_id,
        p.model_name,
        p.ranking_metric,
        l.name,
        l.type,
        l.depth_fraction,
        config,
        l.scores[config] ?? null,
      ]),
    ),
  };
}

export function byTypeCsv(
  profiles: readonly SensitivityProfile[],
  config: string,
): { header: string[]; rows: Cell[][] } {
  const types = layerTypes(profiles);
  return {
    header: ["job_id", "model", "ranking_metric", "type", "layers", "config", "mean_score"],
    rows: profiles.flatMap((p) =>
      types
        .filter((t) => t in p.by_type)
        .map((t) => [
          p.job_id,
          p.model_name,
          p.ranking_metric,
          t,
          p.layer_counts[t] ?? 0,
          config,
          p.by_type[t]?.[config] ?? null,
        ]),
    ),
  };
}

/** The configuration to compare: the one asked for if every scan has it, else the first common one. */
export function pickConfig(common: readonly string[], wanted: string | null): string | null {
  if (wanted !== null && common.includes(wanted)) return wanted;
  return common[0] ?? null;
}

export const formatProfileScore = (metric: Metric, score: number | null | undefined): string =>
  finite(score) ? `${formatNumber(metric === "kl" ? score : -score)}${unit(metric)}` : "—";
