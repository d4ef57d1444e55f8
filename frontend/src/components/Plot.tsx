// A Plotly chart. Plotly is loaded on first use (its own chunk, fetched once for the whole app) and drawn with
// Plotly.react, so updates re-use the chart. A visible "PNG" button exports the chart (the hover toolbar keeps
// its own download button too).
//
// Privacy: nothing on a chart links or uploads outside this server. Plotly's "Edit in Chart Studio" / "Share"
// (sendDataToCloud, to cloud.plotly.com) and its logo link (plotly.com) are switched off and plotlyServerURL is
// empty, so even a caller of Plotly's API cannot send a chart away; tests/browser/test_layout.py checks it.
//
// The bundle is plotly.js-cartesian-dist-min: the basic one has no heatmap trace (see README.md).
import type { Config, Data, Layout, PlotDatum } from "plotly.js";
import { useEffect, useRef, useState } from "react";

type PlotlyModule = typeof import("plotly.js");
let plotly: Promise<PlotlyModule> | null = null;
function loadPlotly(): Promise<PlotlyModule> {
  plotly ??= import("plotly.js-cartesian-dist-min").then((m) => m.default);
  return plotly;
}

/** No link or upload to plotly.com / Chart Studio, no logo, no selection tools (nothing uses a selection). */
export const PRIVATE_CONFIG: Partial<Config> = {
  displaylogo: false,
  showLink: false,
  showSendToCloud: false,
  showEditInChartStudio: false,
  plotlyServerURL: "",
  linkText: "",
  modeBarButtonsToRemove: ["select2d", "lasso2d", "sendDataToCloud"],
};

/** Below this width (a chart on a phone: 336-354 px at 390, under 410 on the widest phones) the hover toolbar
 * is off: a touch screen has no hover, the toolbar covered the legends of 354 px charts, and the visible PNG
 * button still exports (tests/browser/test_phone_pages.py). Desktop charts are 560 px and more. */
export const NARROW_CHART_PX = 450;

/** Room for the hover toolbar (~26 px, top right): a top margin of at least 32 px, and a legend drawn above the
 * plot sits right on the plot (y = 1, anchored at its bottom) with a 24 px row of its own below the toolbar (at
 * y = 1.12 or 1.02 it met the toolbar on the report's, sweep's and recovery's charts). Axes make room for their
 * tick labels and titles (automargin: rotated layer names ran under the "layer" title). */
export function withToolbarRoom(layout: Partial<Layout>, narrow = false): Partial<Layout> {
  const margin = layout.margin ?? {};
  const legend = layout.legend;
  const topLegend = layout.showlegend !== false && legend?.y !== undefined && legend.y >= 1;
  const top = Math.max(margin.t ?? 0, topLegend && !narrow ? 32 + 24 : 32);
  const out: Partial<Layout> = { ...layout, margin: { ...margin, t: top } };
  if (topLegend) out.legend = { ...legend, y: 1, yanchor: "bottom" };
  for (const key of ["xaxis", "yaxis"] as const) {
    const axis = layout[key];
    if (!axis) continue;
    // an axis title longer than a phone's plot is cut at the chart's edge: smaller there (11 px, not 12)
    const title = narrow && axis.title ? { ...axis.title, font: { size: 11, ...axis.title.font } } : axis.title;
    out[key] = { automargin: true, ...axis, title };
  }
  return out;
}

const BASE_LAYOUT: Partial<Layout> = {
  margin: { l: 60, r: 20, t: 10, b: 50 },
  font: { family: "system-ui, sans-serif", size: 12 },
  paper_bgcolor: "white",
  plot_bgcolor: "white",
  bargap: 0,
};

export function Plot({
  data,
  layout,
  filename,
  height = 320,
  onClick,
}: {
  data: Data[];
  layout: Partial<Layout>;
  /** PNG file name offered by the modebar's download button. */
  filename: string;
  height?: number;
  /** Called with the first point under a click (a heatmap cell, a bar). */
  onClick?: (point: PlotDatum) => void;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  const clickRef = useRef(onClick);
  useEffect(() => {
    clickRef.current = onClick;
  }, [onClick]);

  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    let cancelled = false;
    const narrow = element.clientWidth < NARROW_CHART_PX;
    const config: Partial<Config> = {
      ...PRIVATE_CONFIG,
      displayModeBar: narrow ? false : "hover",
      responsive: true,
      toImageButtonOptions: { filename, format: "png", scale: 2 },
    };
    loadPlotly()
      .then(async (Plotly) => {
        if (cancelled) return;
        const drawn = await Plotly.react(
          element,
          data,
          withToolbarRoom({ ...BASE_LAYOUT, height, ...layout }, narrow),
          config,
        );
        // One listener per draw: Plotly.purge (unmount) drops them, and react() keeps the old ones.
        drawn.removeAllListeners("plotly_click");
        drawn.on("plotly_click", (event) => {
          const point = event.points[0];
          if (point) clickRef.current?.(point);
        });
      })
      .catch((e: unknown) => {
        setError(e instanceof Error ? e.message : String(e));
      });
    return () => {
      cancelled = true;
    };
  }, [data, layout, filename, height]);

  useEffect(() => {
    const element = ref.current;
    return () => {
      if (element)
        void loadPlotly().then((Plotly) => {
          Plotly.purge(element);
        });
    };
  }, []);

  const exportPng = () => {
    const element = ref.current;
    if (!element) return;
    void loadPlotly()
      .then((Plotly) => Plotly.downloadImage(element, { format: "png", filename, width: element.clientWidth, height }))
      .catch((e: unknown) => {
        setError(e instanceof Error ? e.message : String(e));
      });
  };

  return (
    <>
      <div className="plot-tools">
        <button
          type="button"
          className="small"
          onClick={exportPng}
          aria-label={`Download the chart ${filename} as PNG`}
        >
          PNG
        </button>
      </div>
      {error && (
        <p className="error" role="alert">
          Could not draw the chart: {error}
        </p>
      )}
      <div ref={ref} className={onClick ? "plot clickable" : "plot"} style={{ minHeight: height }} />
    </>
  );
}
