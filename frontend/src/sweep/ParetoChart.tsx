// The Pareto scatter of a sweep's points (or several sweeps'): every point, the frontier for the chosen
// objectives and bounds as a line, its knee as a star, points slower than fp32 (beyond the timing spread)
// ringed, the selected point circled. A click on a point selects it and lists any others at the same
// place. Recovered models (recovery jobs launched from a point) as green diamonds, dotted to their point.
// PNG from the button or the modebar, CSV from the panel's button.
import type { UseQueryResult } from "@tanstack/react-query";
import type { PlotDatum } from "plotly.js";
import { useCallback, useMemo, useState, type ReactNode } from "react";
import type { FrontierOut } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { ErrorMessage } from "../components/QueryView";
import { samePlace, value, type SweepRow } from "../lib/sweep";
import { buildAxis } from "../lib/sweepAxes";
import { paretoFigure, type Series } from "../lib/sweepChart";
import { pointsCsv } from "../lib/sweepTable";
import { objectiveInfo } from "../lib/sweepObjectives";
import type { SweepQuery, SweepView } from "../lib/sweepQuery";
import { recoveredOnChart, recoveredTraces } from "../recovery/frontier";
import { useSweepRecoveries } from "../recovery/frontierQueries";

const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

export function ParetoChart({
  title,
  filename,
  rows,
  series,
  available,
  view,
  query,
  frontier,
  selected,
  onSelect,
  sweepNames,
  controls,
  legendNote,
}: {
  title: string;
  filename: string;
  rows: readonly SweepRow[];
  series: readonly Series[];
  available: readonly string[];
  view: SweepView;
  query: SweepQuery;
  frontier: UseQueryResult<FrontierOut>;
  selected: string | null;
  onSelect: (id: string) => void;
  sweepNames?: ReadonlyMap<string, string>;
  /** The axis pickers, above the chart. */
  controls: ReactNode;
  legendNote?: string;
}) {
  const x = useMemo(
    () =>
      buildAxis(
        view.x,
        view.xDir,
        query.xLog,
        rows.map((r) => value(r, view.x)),
        "x",
      ),
    [view.x, view.xDir, query.xLog, rows],
  );
  const y = useMemo(
    () =>
      buildAxis(
        view.y,
        view.yDir,
        query.yLog,
        rows.map((r) => value(r, view.y)),
        "y",
      ),
    [view.y, view.yDir, query.yLog, rows],
  );
  const data = frontier.data ?? null;
  const figure = useMemo(
    () =>
      paretoFigure({
        series,
        x,
        y,
        frontier: data,
        bounds: view.specs,
        selected,
        slowBatch: view.batch,
        sweepNames,
      }),
    [series, x, y, data, view.specs, view.batch, selected, sweepNames],
  );
  const sweepIds = useMemo(() => [...new Set(rows.map((r) => r.jobId))], [rows]);
  const recoveries = useSweepRecoveries(sweepIds);
  const recovered = useMemo(() => recoveredOnChart(recoveries, rows), [recoveries, rows]);
  const recoveredFigure = useMemo(() => recoveredTraces(recovered, rows, x, y), [recovered, rows, x, y]);
  const plotData = useMemo(() => [...figure.data, ...recoveredFigure.data], [figure.data, recoveredFigure]);
  // Points with equal coordinates draw on top of each other: a click lists all of them to pick from.
  const [place, setPlace] = useState<string[]>([]);
  const onClick = useCallback(
    (point: PlotDatum) => {
      if (typeof point.customdata !== "string") return;
      const row = rows.find((r) => r.id === point.customdata);
      setPlace(row ? samePlace(row, rows, view.x, view.y).map((r) => r.id) : []);
      onSelect(point.customdata);
    },
    [onSelect, rows, view.x, view.y],
  );
  const together = place.length > 1 ? rows.filter((r) => place.includes(r.id)) : [];
  const knee = data?.knee ? rows.find((r) => r.id === data.knee) : undefined;
  const zeroNote = (axis: typeof x) =>
    axis.zeros > 0
      ? `${objectiveInfo(axis.name).label} of exactly 0 (the golden model) sits at “0” on its log axis.`
      : "";
  const caption = [
    `${plural(figure.drawn, "point")}${figure.undrawn.length ? ` (not drawn, no value for an axis: ${figure.undrawn.map((r) => r.label).join(", ")})` : ""}.`,
    data && data.frontier.length > 0
      ? `The red line joins the ${plural(data.frontier.length, "point")} no other point beats on both objectives${view.specs.length ? " within the bounds" : ""}${knee ? `; the star is the knee, the best trade-off (${data.knee_method.replaceAll("_", " ")}): ${knee.label}` : ""}.`
      : "",
    figure.outside > 0
      ? `${plural(figure.outside, "point")} outside the bounds ${figure.outside === 1 ? "is" : "are"} faded.`
      : "",
    figure.slow.length > 0
      ? `Orange rings: slower than fp32 at batch ${String(view.batch)} beyond the measured spread (the p50 difference exceeds either point's p90 − p50).`
      : "",
    legendNote ?? "",
    recovered.length > 0
      ? `Green diamonds: ${plural(recovered.length, "recovered model")} (recovery jobs launched from a point), dotted to the point ${recovered.length === 1 ? "it recovers" : "they recover"}; fidelity measured on the recovery's held-out split, cost objectives the point's (same configuration)${recoveredFigure.drawn < recovered.length ? "; not drawn on an axis the recovery does not measure (latency)" : ""}.`
      : "",
    zeroNote(x),
    zeroNote(y),
    "Hover for the configuration and its numbers; click a point for its details.",
  ]
    .filter(Boolean)
    .join(" ");
  const empty = data !== null && data.frontier.length === 0;
  return (
    <ChartPanel
      title={title}
      caption={caption}
      csv={() =>
        pointsCsv(rows, {
          objectives: available,
          frontier: data,
          bounds: view.specs,
          slowBatch: view.batch,
          sweepNames,
        })
      }
    >
      {controls}
      {frontier.isError && <ErrorMessage error={frontier.error} />}
      {empty && (
        <p className="warning" role="status">
          No point meets every bound: there is no frontier. Loosen or clear the constraints.
        </p>
      )}
      <div
        className={frontier.isFetching ? "pareto updating" : "pareto"}
        data-points={figure.drawn}
        data-frontier={figure.line.x.length}
        aria-busy={frontier.isFetching}
      >
        <Plot data={plotData} layout={figure.layout} filename={filename} height={460} onClick={onClick} />
      </div>
      {together.length > 1 && (
        <div className="same-place" role="group" aria-label="Points at the same position">
          <span className="muted small-text">{together.length} points at this position:</span>{" "}
          {together.map((r) => (
            <button
              key={r.id}
              type="button"
              className={r.id === selected ? "small chip-selected" : "small"}
              aria-pressed={r.id === selected}
              onClick={() => {
                onSelect(r.id);
              }}
            >
              {sweepNames ? `${sweepNames.get(r.jobId) ?? ""} · ${r.label}` : r.label}
            </button>
          ))}
        </div>
      )}
    </ChartPanel>
  );
}
