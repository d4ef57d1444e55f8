import { formatNumber, formatPercent } from "../lib/format";
import type { SummaryView } from "../lib/summary";

/** Whether the damage is spread over all samples or concentrated in a few, and how many are flagged. */
export function Verdict({ summary }: { summary: SummaryView }) {
  const c = summary.concentration;
  const measure = c?.measure === "kl" ? "KL divergence" : (c?.measure ?? "");
  return (
    <section className={`verdict panel verdict-${c?.verdict ?? "unknown"}`} aria-labelledby="verdict-heading">
      <h2 id="verdict-heading">
        {c
          ? c.verdict === "concentrated"
            ? "Damage is concentrated"
            : "Damage is spread evenly"
          : "Per-sample damage"}
      </h2>
      {c && (
        <p>
          The worst 10 % of samples carry <strong>{formatPercent(c.worst10pctShare, 1)}</strong> of the total {measure};
          the worst 1 % carry <strong>{formatPercent(c.worst1pctShare, 1)}</strong>.{" "}
          <span className="muted">Rule: {c.rule}.</span>
        </p>
      )}
      {summary.nFlagged !== null && (
        <p>
          <strong>{summary.nFlagged.toLocaleString("en-US")}</strong> of {summary.nSamples.toLocaleString("en-US")}{" "}
          samples flagged as degraded
          {summary.flagRule && (
            <span className="muted">
              {" "}
              ({summary.flagRule}
              {summary.thresholdKl !== null && `; threshold ${formatNumber(summary.thresholdKl)} nats`})
            </span>
          )}
          .
        </p>
      )}
    </section>
  );
}
