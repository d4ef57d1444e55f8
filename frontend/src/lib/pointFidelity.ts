// A point's fidelity against the golden model as labelled, formatted facts: the sweep point's table and the
// recovery's every-metric before/after read the same list.
import type { PointFidelity } from "../api/types";
import { formatNumber, formatPercent } from "./format";
import { formatKl } from "./sensitivity";

export type Fact = [string, string];

const pp = (v: number | null) => (v === null ? "—" : `${formatNumber(v, 3)} pp`);
const golden = (a: string, b: string) => `${a} → ${b}`;

export function fidelityFacts(f: PointFidelity | null): Fact[] {
  const n = (key: keyof PointFidelity) => {
    const v = f?.[key];
    return typeof v === "number" ? v : null;
  };
  const sqnr = n("sqnr_db");
  return [
    ["KL mean", formatKl(n("kl_mean"))],
    ["KL max", formatKl(n("kl_max"))],
    ["Reverse KL mean", formatKl(n("kl_reverse_mean"))],
    ["JS mean", formatKl(n("js_mean"))],
    ["Top-1 agreement", formatPercent(n("top1_agreement"))],
    ["Label flips", formatNumber(n("label_flips"))],
    [
      "SQNR",
      sqnr !== null ? `${formatNumber(sqnr)} dB` : f?.sqnr_db_infinite === true || n("kl_mean") === 0 ? "∞ dB" : "—",
    ],
    ["Cosine mean", formatNumber(n("cosine_mean"), 6)],
    ["MSE", formatNumber(n("mse"))],
    ["Accuracy (golden → this)", golden(formatPercent(n("accuracy_golden")), formatPercent(n("accuracy_compressed")))],
    ["Accuracy drop", pp(n("accuracy_drop_pp"))],
    ["ECE (golden → this)", golden(formatNumber(n("ece_golden")), formatNumber(n("ece_compressed")))],
    ["Flagged samples", `${formatNumber(n("n_flagged"))} of ${formatNumber(n("n_samples"))}`],
  ];
}
