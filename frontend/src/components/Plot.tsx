// A Plotly chart. Plotly is loaded on first use (its own chunk) and drawn with Plotly.react, so updates
// re-use the chart. The modebar keeps Plotly's "Download plot as a png" button.
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
      displaylogo: false,
      responsive: true,
      modeBarButtonsToRemove: ["select2d", "lasso2d"],
      toImageButtonOptions: { filename, format: "png", scale: 2 },
    };
    loadPlotly()
      .then(async (Plotly) => {
        if (cancelled) return;
        const drawn = await Plotly.react(element, data, { ...BASE_LAYOUT, height, ...layout }, config);
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

  return (
    <>
      {error && (
        <p className="error" role="alert">
          Could not draw the chart: {error}
        </p>
      )}
      <div ref={ref} className={onClick ? "plot clickable" : "plot"} style={{ minHeight: height }} />
    </>
  );
}
