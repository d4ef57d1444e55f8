// The layers × configurations heatmap of a sensitivity job: cells, hover text, labels, the selected cell
// and the matrix CSV.
import type { Annotations, Data, Layout, Shape } from "plotly.js";
import type { SensitivityReport } from "../api/types";
import type { Cell } from "./csv";
import { formatPercent } from "./format";
import { shortName } from "./layerProfile";
import {
  cellAt,
  configsById,
  escapeHtml,
  finite,
  formatCellSqnr,
  formatKl,
  layersByName,
  proxyMetric,
  describeConfig,
} from "./sensitivity";
import { colorAxisOf, type ColorAxis } from "./sensitivityColor";

// ---------------------------------------------------------------------------------------------------------
// The heatmap

/** Light (robust) to dark red (sensitive). */
export const COLORSCALE: [number, string][] = [
  [0, "#fff7ec"],
  [0.25, "#fdd49e"],
  [0.5, "#fc8d59"],
  [0.75, "#d7301f"],
  [1, "#7f0000"],
];
const GAP_COLOR = "#d9dee5";
const SELECTED_COLOR = "#1d4ed8";

export function hoverGrid(report: SensitivityReport): string[][] {
  const layers = layersByName(report);
  const configs = configsById(report);
  const allBut = report.mode === "all_but";
  return report.matrix.rows.map((row, i) => {
    const layer = layers.get(row);
    const head = `${allBut ? "all but " : ""}<b>${escapeHtml(row)}</b> (${escapeHtml(layer?.type ?? "?")})`;
    return report.matrix.columns.map((column, j) => {
      const c = cellAt(report, i, j);
      const config = configs.get(column);
      return [
        head,
        `config: <b>${escapeHtml(column)}</b>${config ? ` — ${escapeHtml(describeConfig(config.config))}` : ""}`,
        `KL mean: ${formatKl(c.kl)}`,
        `top-1 agreement: ${formatPercent(c.top1)}`,
        `SQNR: ${formatCellSqnr(c.sqnr, c.kl)}`,
      ].join("<br>");
    });
  });
}

/** Pixels per layer row: readable names for small models, still scrollable for 500 layers. */
export function rowHeight(rows: number): number {
  if (rows <= 10) return 40;
  if (rows <= 25) return 30;
  if (rows <= 60) return 20;
  if (rows <= 150) return 14;
  return 10;
}

export interface HeatmapFigure {
  data: Data[];
  layout: Partial<Layout>;
  height: number;
  axis: ColorAxis;
}

/** The layers × configurations heatmap; rows in depth order from the top, the selected layer outlined. */
export function heatmapFigure(report: SensitivityReport, selected: string | null): HeatmapFigure {
  const { rows, columns } = report.matrix;
  const axis = colorAxisOf(report);
  const rowPx = rowHeight(rows.length);
  const labelEvery = rowPx >= 14 ? 1 : 2;
  const tickvals = rows.map((_, i) => i).filter((i) => i % labelEvery === 0);
  const ticktext = tickvals.map((i) => shortName(rows[i] ?? "", 32));
  const longest = Math.max(4, ...ticktext.map((t) => t.length));
  const longestColumn = Math.max(4, ...columns.map((c) => c.length));
  const angled = columns.length > 5 || longestColumn * 7 * columns.length > 700;
  const margin = {
    l: Math.min(260, 16 + longest * 7),
    r: 20,
    t: angled ? Math.min(140, 24 + longestColumn * 5.5) : 40,
    b: 10,
  };
  const height = Math.max(220, rows.length * rowPx + margin.t + margin.b);
  const gaps = rows.length <= 60 && columns.length <= 40 ? 1 : 0;
  const data: Data[] = [
    {
      type: "heatmap",
      name: report.mode === "all_but" ? "all but" : "only",
      x: columns,
      y: rows.map((_, i) => i),
      z: axis.z,
      zmin: axis.zmin,
      zmax: axis.zmax,
      text: hoverGrid(report) as unknown as string[],
      hovertemplate: "%{text}<extra></extra>",
      hoverongaps: false,
      colorscale: COLORSCALE,
      xgap: gaps,
      ygap: gaps,
      colorbar: {
        title: { text: axis.short, side: "top" },
        tickvals: axis.tickvals,
        ticktext: axis.ticktext,
        lenmode: "pixels",
        len: Math.min(320, height - margin.t - margin.b),
        y: 1,
        yanchor: "top",
        thickness: 14,
      },
    },
  ];
  const index = selected === null ? -1 : rows.indexOf(selected);
  const shapes: Partial<Shape>[] =
    index < 0
      ? []
      : [
          {
            type: "rect",
            xref: "paper",
            yref: "y",
            x0: 0,
            x1: 1,
            y0: index - 0.5,
            y1: index + 0.5,
            line: { color: SELECTED_COLOR, width: 3 },
            fillcolor: "rgba(0,0,0,0)",
          },
        ];
  const layout: Partial<Layout> = {
    margin,
    plot_bgcolor: GAP_COLOR,
    xaxis: { side: "top", tickangle: angled ? -35 : 0, type: "category", fixedrange: false },
    yaxis: {
      autorange: "reversed",
      tickvals,
      ticktext,
      tickfont: { size: rowPx >= 20 ? 12 : 10 },
      zeroline: false,
      showgrid: false,
    },
    shapes,
    annotations: cellLabels(report, axis),
    hoverlabel: { align: "left" },
  };
  return { data, layout, height, axis };
}

/** Cells of a small heatmap (up to 400) labelled with their number (KL or SQNR, 2 significant digits),
 * white on the dark half of the colour scale; a larger one keeps its numbers in the hover text only. */
export function cellLabels(report: SensitivityReport, axis: ColorAxis): Partial<Annotations>[] {
  const { rows, columns } = report.matrix;
  if (rows.length * columns.length > 400 || rowHeight(rows.length) < 20) return [];
  const kl = proxyMetric(report) === "kl";
  const labels: Partial<Annotations>[] = [];
  rows.forEach((_, i) => {
    columns.forEach((column, j) => {
      const c = cellAt(report, i, j);
      const v = kl ? c.kl : c.sqnr;
      const z = axis.z[i]?.[j];
      if (!finite(v) || z === null || z === undefined) return;
      const dark = (z - axis.zmin) / (axis.zmax - axis.zmin || 1) > 0.55;
      labels.push({
        x: column,
        y: i,
        xref: "x",
        yref: "y",
        text: v === 0 ? "0" : Number(v.toPrecision(2)).toString(),
        showarrow: false,
        font: { size: 10, color: dark ? "white" : "#222" },
      });
    });
  });
  return labels;
}

/** The heatmap's numbers in long form (one line per cell), with each layer's metadata. */
export function matrixCsv(report: SensitivityReport): { header: string[]; rows: Cell[][] } {
  const layers = layersByName(report);
  const rows: Cell[][] = [];
  report.matrix.rows.forEach((name, i) => {
    const layer = layers.get(name);
    report.matrix.columns.forEach((column, j) => {
      const c = cellAt(report, i, j);
      rows.push([
        report.mode,
        name,
        layer?.type,
        layer?.depth_index,
        layer?.depth_fraction,
        column,
        c.kl,
        c.top1,
        c.sqnr,
      ]);
    });
  });
  return {
    header: [
      "mode",
      "layer",
      "type",
      "depth_index",
      "depth_fraction",
      "config",
      "kl_mean",
      "top1_agreement",
      "sqnr_db",
    ],
    rows,
  };
}
