// The ranking of a sensitivity job's layers, most sensitive first, under one configuration or all, and its CSV.
import type { SensitivityReport } from "../api/types";
import type { Cell } from "./csv";
import { formatNumber } from "./format";
import { finite, formatKl, proxyMetric, scoreGrid, type Grid, type Metric, layersByName } from "./sensitivity";

// ---------------------------------------------------------------------------------------------------------
// Rankings

/**
 * Layers most sensitive first, as the engine ranks them: by the mean score over the configurations (or one
 * configuration's score), ties by the larger maximum, then depth order; layers without a score last.
 * `ascending` turns it round (the all-but view: leaving the layer in float lowering the damage the most).
 */
export function rankLayers(
  rows: readonly string[],
  columns: readonly string[],
  scores: Grid,
  config: string | null,
  ascending = false,
): string[] {
  const column = config === null ? -1 : columns.indexOf(config);
  const sign = ascending ? -1 : 1;
  const keyed = rows.map((name, i) => {
    const values = (column >= 0 ? [scores[i]?.[column]] : (scores[i] ?? []))
      .filter((v): v is number => finite(v))
      .map((v) => sign * v);
    const mean = values.length ? values.reduce((a, b) => a + b, 0) / values.length : Number.NEGATIVE_INFINITY;
    const max = values.length ? Math.max(...values) : Number.NEGATIVE_INFINITY;
    return { name, i, mean, max };
  });
  keyed.sort((a, b) => b.mean - a.mean || b.max - a.max || a.i - b.i);
  return keyed.map((k) => k.name);
}

/** A ranking the API sent (ranking.overall / ranking.by_config.ID), if it names exactly the matrix's rows. */
function apiRanking(report: SensitivityReport, config: string | null): string[] | null {
  if (report.ranking_metric.startsWith("task.")) return null; // the task's order: the KL / SQNR views rank by their own
  const list = (config === null ? report.ranking.overall : report.ranking.by_config[config]) ?? [];
  const rows = new Set(report.matrix.rows);
  if (list.length !== rows.size || !list.every((name) => rows.has(name))) return null;
  return list;
}

/**
 * Layers most sensitive first: the API's ranking when it names exactly the matrix's rows. Each layer
 * compressed alone: highest score first. All but each layer: lowest score first, since keeping a sensitive
 * layer in float removes the most damage (the API ranks that view the same way).
 */
export function rankingOf(report: SensitivityReport, config: string | null): string[] {
  const metric = proxyMetric(report);
  const fromApi = apiRanking(report, config);
  if (fromApi) return fromApi;
  return rankLayers(
    report.matrix.rows,
    report.matrix.columns,
    scoreGrid(report, metric),
    config,
    report.mode === "all_but",
  );
}

export interface RankedLayer {
  rank: number;
  name: string;
  type: string;
  /** The mean score over the configurations, or the one configuration's. */
  score: number | null;
}

export function rankedLayers(report: SensitivityReport, config: string | null): RankedLayer[] {
  const metric = proxyMetric(report);
  const grid = scoreGrid(report, metric);
  const rowOf = new Map(report.matrix.rows.map((name, i) => [name, i]));
  const column = config === null ? -1 : report.matrix.columns.indexOf(config);
  const layers = layersByName(report);
  return rankingOf(report, config).map((name, rank) => {
    const values = grid[rowOf.get(name) ?? -1] ?? [];
    const picked = (column >= 0 ? [values[column]] : values).filter((v): v is number => finite(v));
    return {
      rank: rank + 1,
      name,
      type: layers.get(name)?.type ?? "?",
      score: picked.length ? picked.reduce((a, b) => a + b, 0) / picked.length : null,
    };
  });
}

/** A score as read: KL in nats, or −SQNR shown as the SQNR it stands for. */
export function formatScore(metric: Metric, score: number | null): string {
  if (score === null) return "—";
  return metric === "kl" ? formatKl(score) : `${formatNumber(-score)} dB`;
}

export function rankingCsv(report: SensitivityReport, config: string | null): { header: string[]; rows: Cell[][] } {
  const metric = proxyMetric(report);
  return {
    header: ["rank", "layer", "type", metric === "kl" ? "kl_mean" : "sqnr_db", "config"],
    rows: rankedLayers(report, config).map((r) => [
      r.rank,
      r.name,
      r.type,
      r.score === null ? null : metric === "kl" ? r.score : -r.score,
      config ?? "mean over configurations",
    ]),
  };
}
