// The selected layer: its metadata, its row of the matrix, and its channel importance as a bar chart (one of
// the methods the job computed, fetched for this layer only, at most CHANNEL_LIMIT channels).
import { useMemo } from "react";
import { ApiError } from "../api/http";
import { useChannelImportance, type ImportanceMethod } from "../api/sensitivity";
import type { ChannelImportance, SensitivityReport } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { formatCount, formatNumber, formatPercent } from "../lib/format";
import { cellAt, describeConfig, formatCellSqnr, formatKl, layersByName } from "../lib/sensitivity";
import { CHANNEL_LIMIT, channelCsv, channelFigure } from "../lib/sensitivityChannels";
import { rankingOf } from "../lib/sensitivityRanking";

export const METHOD_LABELS: Record<ImportanceMethod, string> = {
  l1: "L1 norm of the weights",
  l2: "L2 norm of the weights",
  taylor: "Taylor (Fisher) on the calibration set",
  reconstruction: "Reconstruction: KL with the channel zeroed",
};

const METHODS = Object.keys(METHOD_LABELS) as ImportanceMethod[];

/** The importance methods a job computed (its params), in a fixed order. */
export function methodsOf(params: Record<string, unknown>): ImportanceMethod[] {
  const asked = params.importance_methods;
  if (!Array.isArray(asked)) return ["l1", "l2"];
  return METHODS.filter((m) => asked.includes(m));
}

function ChannelChart({ ci }: { ci: ChannelImportance }) {
  const figure = useMemo(() => channelFigure(ci), [ci]);
  const channels = ci.channels ?? [];
  if (ci.error)
    return (
      <p className="warning" role="alert">
        {(METHOD_LABELS as Record<string, string | undefined>)[ci.method] ?? ci.method} could not score this layer:{" "}
        {ci.error}
      </p>
    );
  if (channels.length === 0) return <Empty>No channel scores for this layer.</Empty>;
  const total = ci.n_channels ?? channels.length;
  const caption = [
    ci.unit ? `Score: ${ci.unit}.` : "",
    total > channels.length
      ? `The ${channels.length.toLocaleString("en-US")} most important of ${total.toLocaleString("en-US")} channels.`
      : `All ${total.toLocaleString("en-US")} channels, most important first.`,
    ...(ci.notes ?? []),
  ]
    .filter(Boolean)
    .join(" ");
  return (
    <ChartPanel title={`Channel importance of ${ci.layer}`} csv={() => channelCsv(ci)} caption={caption}>
      <Plot data={figure.data} layout={figure.layout} filename={`channel-importance-${ci.method}`} height={300} />
    </ChartPanel>
  );
}

function ChannelImportanceView({
  jobId,
  layer,
  methods,
  method,
  onMethod,
}: {
  jobId: string;
  layer: string;
  methods: ImportanceMethod[];
  method: ImportanceMethod;
  onMethod: (method: ImportanceMethod) => void;
}) {
  const query = useChannelImportance(jobId, layer, method, CHANNEL_LIMIT);
  return (
    <div className="channel-importance">
      <div className="chart-head">
        <h4>Channel importance</h4>
        <label className="inline">
          Method
          <select
            value={method}
            onChange={(e) => {
              onMethod(e.target.value as ImportanceMethod);
            }}
          >
            {methods.map((m) => (
              <option key={m} value={m}>
                {METHOD_LABELS[m]}
              </option>
            ))}
          </select>
        </label>
      </div>
      {query.isPending ? (
        <Loading what="channel importance" />
      ) : query.isError ? (
        query.error instanceof ApiError && query.error.status === 404 ? (
          <Empty>{query.error.message}</Empty>
        ) : (
          <ErrorMessage error={query.error} />
        )
      ) : (
        <div className={query.isPlaceholderData ? "stale" : undefined}>
          <ChannelChart ci={query.data} />
        </div>
      )}
    </div>
  );
}

export function LayerDetails({
  jobId,
  report,
  layer,
  methods,
  method,
  onMethod,
}: {
  jobId: string;
  report: SensitivityReport;
  layer: string;
  methods: ImportanceMethod[];
  method: ImportanceMethod | null;
  onMethod: (method: ImportanceMethod) => void;
}) {
  const meta = useMemo(() => layersByName(report).get(layer), [report, layer]);
  const row = report.matrix.rows.indexOf(layer);
  const ranks = useMemo(
    () => new Map(report.matrix.columns.map((c) => [c, rankingOf(report, c).indexOf(layer) + 1])),
    [report, layer],
  );
  const overall = useMemo(() => rankingOf(report, null).indexOf(layer) + 1, [report, layer]);
  const configs = new Map(report.configs.map((c) => [c.id, c]));
  if (!meta)
    return (
      <p className="warning">
        This scan has no layer named <code>{layer}</code>.
      </p>
    );
  const n = report.matrix.rows.length;
  return (
    <section className="panel layer-details" aria-labelledby="layer-details-heading">
      <h3 id="layer-details-heading">
        Layer <code>{layer}</code> <span className="muted">({meta.type})</span>
      </h3>
      <dl className="facts">
        <div>
          <dt>Rank overall</dt>
          <dd>{overall > 0 ? `${overall.toString()} of ${n.toString()}` : "not scanned"}</dd>
        </div>
        <div>
          <dt>Depth</dt>
          <dd>
            {meta.depth_index} ({formatNumber(meta.depth_fraction, 3)})
          </dd>
        </div>
        <div>
          <dt>Parameters</dt>
          <dd>{formatCount(meta.params)}</dd>
        </div>
        <div>
          <dt>Weight parameters</dt>
          <dd>{formatCount(meta.weight_params)}</dd>
        </div>
        <div>
          <dt>MACs per sample</dt>
          <dd>{formatCount(meta.macs)}</dd>
        </div>
        {meta.shared_with.length > 0 && (
          <div>
            <dt>Shares weights with</dt>
            <dd>{meta.shared_with.join(", ")}</dd>
          </div>
        )}
      </dl>
      {meta.notes.map((note) => (
        <p key={note} className="note small-text">
          {note}
        </p>
      ))}
      <div className="two-col">
        <div>
          <h4>{report.mode === "all_but" ? "Everything but this layer compressed" : "This layer alone compressed"}</h4>
          {row < 0 ? (
            <Empty>This layer was not scanned.</Empty>
          ) : (
            <table className="table compact" aria-label={`Sensitivity of ${layer}`}>
              <thead>
                <tr>
                  <th>Configuration</th>
                  <th className="num">KL mean</th>
                  <th className="num">Top-1 agreement</th>
                  <th className="num">SQNR</th>
                  <th className="num">Rank</th>
                </tr>
              </thead>
              <tbody>
                {report.matrix.columns.map((c, j) => {
                  const cell = cellAt(report, row, j);
                  const config = configs.get(c);
                  return (
                    <tr key={c}>
                      <td title={config ? describeConfig(config.config) : undefined}>
                        <code>{c}</code>
                      </td>
                      <td className="num">{formatKl(cell.kl)}</td>
                      <td className="num">{formatPercent(cell.top1)}</td>
                      <td className="num">{formatCellSqnr(cell.sqnr, cell.kl)}</td>
                      <td className="num">{ranks.get(c) ?? "—"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
        </div>
        {methods.length === 0 || method === null ? (
          <Empty>This scan computed no channel importance (its importance_methods was empty).</Empty>
        ) : (
          <ChannelImportanceView jobId={jobId} layer={layer} methods={methods} method={method} onMethod={onMethod} />
        )}
      </div>
    </section>
  );
}
