// The clicked node: its identity, where it sits in the model, its numbers and, for a sensitivity scan, its
// score under every configuration.
import type { LayerFidelity, SensitivityReport } from "../api/types";
import { formatCount } from "../lib/format";
import { href } from "../lib/route";
import type { NodeMetric } from "./metrics";
import { nameIndex } from "./metrics";
import type { GraphNode } from "./types";
import { useRevealOnOpen } from "../components/reveal";

interface Props {
  node: GraphNode;
  metric: NodeMetric | null;
  report: SensitivityReport | null;
  /** The fidelity profile's row of this layer, when the graph is coloured by a fidelity job. */
  fidelity: LayerFidelity | null;
  /** Expanded groups around the node, outermost first, that can be collapsed again. */
  collapsible: string[];
  onCollapse: (prefix: string) => void;
}

function sensitivityRow(report: SensitivityReport, node: GraphNode): number {
  const names = new Set([node.id, ...node.aliases, node.module_path ?? ""]);
  return report.matrix.rows.findIndex((r) => names.has(r) || nameIndex([node]).get(r) === node.id);
}

function rowScores(report: SensitivityReport, row: number): { config: string; value: number | null }[] {
  if (row < 0) return [];
  const matrix = report.ranking_metric === "kl" ? report.matrix.kl_mean : report.matrix.sqnr_db;
  return report.matrix.columns.map((config, i) => ({ config, value: matrix[row]?.[i] ?? null }));
}

function matchHow(layer: LayerFidelity): string {
  const parts = [layer.match_method, layer.match_confidence?.toFixed(2)].filter((p) => p !== null && p !== undefined);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

function db(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : `${value.toFixed(1)} dB`;
}

export function NodePanel({ node, metric, report, fidelity, collapsible, onCollapse }: Props) {
  const value = metric?.values.get(node.id);
  const row = report ? sensitivityRow(report, node) : -1;
  const scores = report ? rowScores(report, row) : [];
  const scanLayer = report && row >= 0 ? report.matrix.rows[row] : undefined;
  const unit = report?.ranking_metric === "kl" ? "KL mean, nats" : "output SQNR, dB";
  const panel = useRevealOnOpen<HTMLElement>(node.id);
  return (
    <section ref={panel} className="graph-node-panel" aria-label="Selected node" data-testid="node-panel">
      <h3>{node.id}</h3>
      <dl className="facts compact">
        <div>
          <dt>Op</dt>
          <dd>
            {node.op_type}
            {node.quantized ? " (quantized: QDQ folded in)" : ""}
          </dd>
        </div>
        <div>
          <dt>Module</dt>
          <dd>{node.module_path ?? "—"}</dd>
        </div>
        <div>
          <dt>Parameters</dt>
          <dd data-testid="node-params">{formatCount(node.params)}</dd>
        </div>
        <div>
          <dt>MACs</dt>
          <dd>{formatCount(node.macs)}</dd>
        </div>
        {metric && (
          <div>
            <dt>{metric.label}</dt>
            <dd data-testid="node-metric">
              {value === undefined ? "—" : `${value.toPrecision(4)} ${metric.unit === "count" ? "" : metric.unit}`}
            </dd>
          </div>
        )}
      </dl>
      {node.aliases.length > 0 && (
        <p className="small-text">
          Also known as: <code>{node.aliases.join(", ")}</code>
        </p>
      )}
      {scores.length > 0 && (
        <table className="compact" aria-label="Sensitivity per configuration">
          <thead>
            <tr>
              <th>Configuration</th>
              <th className="num">{unit}</th>
            </tr>
          </thead>
          <tbody>
            {scores.map((s) => (
              <tr key={s.config}>
                <td>{s.config}</td>
                <td className="num">{s.value === null ? "—" : s.value.toPrecision(4)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {fidelity && (
        <dl className="facts compact" aria-label="Fidelity of this layer" data-testid="node-fidelity">
          <div>
            <dt>Matched to</dt>
            <dd>
              {fidelity.compressed_name}
              {matchHow(fidelity)}
            </dd>
          </div>
          <div>
            <dt>Accumulated SQNR</dt>
            <dd>{db(fidelity.accumulated.sqnr_db)}</dd>
          </div>
          <div>
            <dt>Local SQNR</dt>
            <dd>{db(fidelity.local?.sqnr_db)}</dd>
          </div>
          <div>
            <dt>Accumulated cosine</dt>
            <dd>{fidelity.accumulated.cosine_mean?.toFixed(5) ?? "—"}</dd>
          </div>
        </dl>
      )}
      {report && scanLayer !== undefined && (
        <p className="small-text">
          <a
            href={href({
              page: "sensitivity",
              jobId: report.job_id,
              query: { view: "only", ranking: null, layer: scanLayer, method: null },
            })}
          >
            Channel importance and details of {scanLayer} in this scan
          </a>
        </p>
      )}
      {collapsible.length > 0 && (
        <p className="small-text">
          Collapse:{" "}
          {collapsible.map((prefix) => (
            <button
              key={prefix}
              type="button"
              className="link"
              onClick={() => {
                onCollapse(prefix);
              }}
            >
              {prefix}
            </button>
          ))}
        </p>
      )}
    </section>
  );
}
