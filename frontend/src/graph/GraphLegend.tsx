// The colour scale of the graph: what is measured, in which unit, which end is worse.
import { formatCount } from "../lib/format";
import { LEGEND_STOPS, type NodeMetric } from "./metrics";

function formatValue(value: number, unit: string): string {
  if (unit === "dB") return `${value.toFixed(1)} dB`;
  if (unit === "nats") return `${value.toPrecision(3)} nats`;
  return formatCount(value);
}

export function GraphLegend({ metric, min, max, log }: { metric: NodeMetric; min: number; max: number; log: boolean }) {
  const stops = metric.higherIsWorse ? LEGEND_STOPS : [...LEGEND_STOPS].reverse();
  return (
    <figure className="graph-legend" aria-label="Colour legend">
      <figcaption>
        {metric.label}{" "}
        <span className="muted">
          ({metric.unit}
          {log ? ", log scale" : ""})
        </span>
      </figcaption>
      <div className="graph-ramp" style={{ background: `linear-gradient(to right, ${stops.join(", ")})` }} />
      <div className="graph-ramp-ends">
        <span data-testid="legend-min">{formatValue(min, metric.unit)}</span>
        <span data-testid="legend-max">{formatValue(max, metric.unit)}</span>
      </div>
      <p className="muted small-text">
        Red is worse ({metric.higherIsWorse ? "higher" : "lower"}); grey boxes have no value. {metric.values.size}{" "}
        layers have one. Groups show the {log ? "sum" : "worst"} of their nodes.
      </p>
    </figure>
  );
}
