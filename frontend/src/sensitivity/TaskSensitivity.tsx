// A scan scored on a task (issue 30): the layers × configurations heatmap of one task metric (the one the scan
// was ranked by first; another can be picked) and the layers most sensitive to it. A click selects the layer,
// as in the KL / SQNR heatmap beside it. Nothing is drawn for a scan without a task.
import type { PlotDatum } from "plotly.js";
import { useCallback, useState } from "react";
import type { SensitivityReport } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { shortName } from "../lib/layerProfile";
import { taskMetricLabel } from "../lib/sensitivityTask";
import {
  largerIsWorse,
  taskHeatmapFigure,
  taskMatrixCsv,
  taskMetricNames,
  taskRanking,
} from "../lib/sensitivityTaskMatrix";

const FIRST = 15;

export function TaskSensitivity({
  report,
  config,
  selected,
  onSelect,
}: {
  report: SensitivityReport;
  config: string | null;
  selected: string | null;
  onSelect: (layer: string) => void;
}) {
  const names = taskMetricNames(report);
  const [picked, setPicked] = useState<string | null>(null);
  const name = picked !== null && names.includes(picked) ? picked : (names[0] ?? null);
  // the React compiler memoizes these (a manual useMemo over the derived name could not be kept)
  const figure = name === null ? null : taskHeatmapFigure(report, name);
  const ranked = name === null ? [] : taskRanking(report, name, config);
  const rows = report.matrix.rows;
  const onClick = useCallback(
    (point: PlotDatum) => {
      const layer = typeof point.y === "string" ? point.y : typeof point.y === "number" ? rows[point.y] : undefined;
      if (layer !== undefined) onSelect(layer);
    },
    [rows, onSelect],
  );
  if (name === null || figure === null) return null;
  const label = taskMetricLabel(name);
  const worse = largerIsWorse(name) ? "largest" : "smallest";
  return (
    <section aria-labelledby="task-matrix-heading">
      <div className="chart-head">
        <h2 id="task-matrix-heading">Task: {report.task}</h2>
        <label className="inline">
          Task metric
          <select
            value={name}
            onChange={(e) => {
              setPicked(e.target.value);
            }}
          >
            {names.map((n) => (
              <option key={n} value={n}>
                {taskMetricLabel(n)}
                {n === report.rank_by ? " (ranked by)" : ""}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="split sensitivity-split">
        <ChartPanel
          title={`${label} per layer and configuration`}
          csv={() => taskMatrixCsv(report)}
          caption={`Each cell ran the whole compressed model over the samples and scored it on the task. Darker = more sensitive (the ${worse} ${label} first). Click a cell to inspect its layer.`}
        >
          <Plot
            data={figure.data}
            layout={figure.layout}
            height={figure.height}
            filename={`sensitivity-${name}`}
            onClick={onClick}
          />
        </ChartPanel>
        <section className="panel ranking" aria-label={`Layers by ${label}`}>
          <h3>Most sensitive by {label}</h3>
          <p className="muted small-text">
            {config === null ? "Mean over the configurations" : `Configuration ${config}`}, {worse} first.
          </p>
          <ol className="ranked scroll-y" aria-label={`Layers by ${label}, most sensitive first`}>
            {ranked.slice(0, FIRST).map((r) => (
              <li key={r.name}>
                <button
                  type="button"
                  className={r.name === selected ? "ranked-layer selected" : "ranked-layer"}
                  aria-pressed={r.name === selected}
                  data-layer={r.name}
                  onClick={() => {
                    onSelect(r.name);
                  }}
                >
                  <span className="ranked-rank">{r.rank}</span>
                  <span className="ranked-name" title={r.name}>
                    <code>{shortName(r.name, 32)}</code>
                  </span>
                  <span className="ranked-score">
                    {r.value === null ? "—" : Number(r.value.toPrecision(3)).toString()}
                  </span>
                </button>
              </li>
            ))}
          </ol>
        </section>
      </div>
    </section>
  );
}
