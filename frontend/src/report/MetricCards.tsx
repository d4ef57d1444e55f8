import type { OutputMetrics } from "../api/types";
import { metricCards, type MetricCard } from "../lib/metrics";

function Cards({ cards, label }: { cards: MetricCard[]; label: string }) {
  return (
    <ul className="cards" aria-label={label}>
      {cards.map((card) => (
        <li key={card.path} className="card">
          <span className="card-label">{card.label}</span>
          <span className="card-value">{card.value}</span>
          <span className="card-direction">{card.direction ? `${card.direction} is better` : "for reference"}</span>
          <span className="card-explanation">{card.explanation}</span>
        </li>
      ))}
    </ul>
  );
}

/** The headline metrics of an output, and the others behind a disclosure. */
export function MetricCards({ metrics }: { metrics: OutputMetrics }) {
  const cards = metricCards(metrics);
  const more = cards.filter((c) => !c.headline);
  return (
    <>
      <Cards cards={cards.filter((c) => c.headline)} label="Headline metrics" />
      {more.length > 0 && (
        <details className="more-metrics">
          <summary>{more.length} more metrics</summary>
          <Cards cards={more} label="More metrics" />
        </details>
      )}
    </>
  );
}
