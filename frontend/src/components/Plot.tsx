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

/** The hover toolbar sits in the top margin (~26 px), so it never covers a title, legend or label. */
export function withToolbarRoom(layout: Partial<Layout>): Partial<Layout> {
  const margin = layout.margin ?? {};
  return { ...layout, margin: { ...margin, t: Math.max(margin.t ?? 0, 32) } };
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
    const config: Partial<Config> = {
      ...PRIVATE_CONFIG,
      responsive: true,
      toImageButtonOptions: { filename, format: "png", scale: 2 },
    };
    loadPlotly()
      .then(async (Plotly) => {
        if (cancelled) return;
        const drawn = await Plotly.react(element, data, withToolbarRoom({ ...BASE_LAYOUT, height, ...layout }), config);
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
