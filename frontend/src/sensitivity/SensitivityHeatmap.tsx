// The layers × configurations heatmap of a sensitivity scan. Plotly draws the whole matrix as one image (no
// DOM node per cell), so 500 layers × 10 configurations stay responsive; tall matrices scroll inside the
// panel with the configurations' labels on top. A click on a cell selects its layer.
import type { PlotDatum } from "plotly.js";
import { useCallback, useMemo } from "react";
import type { SensitivityReport } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { proxyMetric } from "../lib/sensitivity";
import { heatmapFigure, matrixCsv } from "../lib/sensitivityHeatmap";

/** Heights above this scroll inside the panel. */
const MAX_VISIBLE = 720;

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

export function SensitivityHeatmap({
  report,
  selected,
  onSelect,
}: {
  report: SensitivityReport;
  selected: string | null;
  onSelect: (layer: string) => void;
}) {
  const figure = useMemo(() => heatmapFigure(report, selected), [report, selected]);
  const rows = report.matrix.rows;
  const onClick = useCallback(
    (point: PlotDatum) => {
      const name = typeof point.y === "number" ? rows[point.y] : undefined;
      if (name !== undefined) onSelect(name);
    },
    [rows, onSelect],
  );
  const metric = proxyMetric(report);
  const allBut = report.mode === "all_but";
  const { axis } = figure;
  const caption = [
    allBut
      ? "Each row: every layer compressed except this one, left in float. A light row means keeping that layer in float removes most of the damage: the layer is sensitive."
      : "Each row: this layer alone compressed with each configuration. Darker = more damage to the output.",
    metric === "kl"
      ? "Colour: KL(P‖Q) mean against the golden model, log scale."
      : "Colour: SQNR of the output (the model is not a classifier), lower = darker.",
    axis.zeros > 0 ? `${plural(axis.zeros, "cell")} with a KL of exactly 0 sit at “0” on the colour bar.` : "",
    axis.missing > 0 ? `${plural(axis.missing, "cell")} could not be computed (grey).` : "",
    "Hover for the numbers; click a cell to inspect its layer.",
  ]
    .filter(Boolean)
    .join(" ");
  const tall = figure.height > MAX_VISIBLE;
  return (
    <ChartPanel
      title={allBut ? "Sensitivity heatmap (all but one layer)" : "Sensitivity heatmap"}
      csv={() => matrixCsv(report)}
      caption={caption}
    >
      <div
        className={tall ? "heatmap-scroll" : undefined}
        style={tall ? { maxHeight: MAX_VISIBLE } : undefined}
        data-rows={rows.length}
        data-columns={report.matrix.columns.length}
        tabIndex={tall ? 0 : undefined}
        aria-label={tall ? `Heatmap of ${plural(rows.length, "layer")}, scrollable` : undefined}
        role={tall ? "region" : undefined}
      >
        <Plot
          data={figure.data}
          layout={figure.layout}
          height={figure.height}
          filename={allBut ? "sensitivity-heatmap-all-but" : "sensitivity-heatmap"}
          onClick={onClick}
        />
      </div>
    </ChartPanel>
  );
}
