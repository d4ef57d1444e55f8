// "Does divergence predict the task?" (issue 30): the pure logic of the report's section: which metric to
// show first, Spearman's rho in words, the scatter's series, and the disagreeing samples in words.
import type { components } from "../client/schema";
import { formatNumber } from "../lib/format";

export type TaskProxy = components["schemas"]["TaskProxyOut"];
export type TaskMetricProxy = components["schemas"]["TaskMetricProxyOut"];
export type ProxyPoint = components["schemas"]["ProxyPointOut"];

/** The metric shown first: a per-sample change against ground truth (`*_delta`), else the first one. */
export function defaultMetric(metrics: TaskMetricProxy[]): string | null {
  return (metrics.find((m) => m.metric.endsWith("_delta")) ?? metrics[0])?.metric ?? null;
}

/** The proxy's axis title. */
export function proxyLabel(proxy: TaskProxy["proxy"]): string {
  return proxy === "kl"
    ? "KL(P‖Q) per sample, nats (higher = more divergent)"
    : "SQNR per sample, dB (higher = closer)";
}

/** How strong a rank correlation is, in the usual words (|rho| < 0.1 none, < 0.3 weak, < 0.5 moderate). */
export function strength(rho: number): string {
  const r = Math.abs(rho);
  return r < 0.1 ? "no" : r < 0.3 ? "a weak" : r < 0.5 ? "a moderate" : r < 0.7 ? "a strong" : "a very strong";
}

/** Spearman's rho of one metric stated in words, with its p-value and the samples it stands on. */
export function rhoInWords(m: TaskMetricProxy, proxy: TaskProxy["proxy"]): string {
  const divergence = proxy === "kl" ? "KL" : "lower SQNR";
  const counted = `${m.n.toLocaleString("en-US")} samples${
    m.n_excluded > 0 ? `; ${m.n_excluded.toLocaleString("en-US")} left out (undefined proxy or task value)` : ""
  }${m.n_exact > 0 ? `; ${m.n_exact.toLocaleString("en-US")} with identical outputs counted as least divergent` : ""}`;
  if (m.spearman_rho === null) return `Spearman's rho is undefined: ${m.undefined ?? "no reason stored"} (${counted}).`;
  const rho = m.spearman_rho;
  const loss = m.higher_is_better ? `lower ${m.metric}` : `higher ${m.metric}`;
  const p = m.p_value === null ? "" : `, p = ${formatNumber(m.p_value, 2)}`;
  const head = `Spearman's rho = ${formatNumber(rho, 3)}${p} (${counted}).`;
  if (Math.abs(rho) < 0.1)
    return `${head} The divergence does not predict ${m.metric} for this model: rank samples by the task itself.`;
  if (rho < 0) {
    const words = strength(rho);
    return `${head} ${words.charAt(0).toUpperCase()}${words.slice(1)} inverse relation: samples with more divergence (${divergence}) tend to have less task loss — the divergence misleads here.`;
  }
  const trust = rho >= 0.5 ? "it is a usable proxy" : "treat it as a rough guide only";
  return `${head} The divergence has ${strength(rho)} positive relation with task loss: samples with more divergence (${divergence}) tend to have ${loss}; ${trust}.`;
}

/** The scatter's series: one point per sample with both values (a sample with identical outputs has no SQNR
 * to plot and is counted instead). */
export function scatterSeries(points: ProxyPoint[], metric: string) {
  const x: number[] = [];
  const y: number[] = [];
  const index: number[] = [];
  let unplotted = 0;
  for (const p of points) {
    const value = p.values[metric];
    if (p.proxy === null || value === null || value === undefined) {
      unplotted += 1;
      continue;
    }
    x.push(p.proxy);
    y.push(value);
    index.push(p.sample_index);
  }
  return { x, y, index, unplotted };
}

/** One disagreeing sample in words. */
export function disagreementText(gap: number): string {
  return gap > 0 ? "the task lost more than its divergence suggests" : "its outputs diverged more than the task minded";
}
