// What a sweep's page and the compare page's sweeps section share: the Pareto chart with its axis pickers, and
// beside it the bounds and the frontier's points.
import type { UseQueryResult } from "@tanstack/react-query";
import type { FrontierOut } from "../api/types";
import type { SweepRow } from "../lib/sweep";
import type { Series } from "../lib/sweepChart";
import type { SweepQuery, SweepView } from "../lib/sweepQuery";
import { AxisPickers, BoundsControls } from "./FrontierControls";
import { FrontierList } from "./FrontierList";
import { ParetoChart } from "./ParetoChart";

export function ParetoSplit({
  title,
  filename,
  legendNote,
  rows,
  series,
  available,
  view,
  query,
  onChange,
  frontier,
  selected,
  onSelect,
  sweepNames,
  listSweepNames,
}: {
  title: string;
  filename: string;
  legendNote: string;
  rows: readonly SweepRow[];
  series: readonly Series[];
  available: readonly string[];
  view: SweepView;
  query: SweepQuery;
  /** A change of the axes or the bounds. */
  onChange: (change: Partial<SweepQuery>) => void;
  frontier: UseQueryResult<FrontierOut>;
  selected: string | null;
  onSelect: (id: string) => void;
  /** The sweeps' names, when the points come from several. */
  sweepNames?: ReadonlyMap<string, string>;
  /** Whether the frontier's list names each point's sweep too. */
  listSweepNames?: boolean;
}) {
  return (
    <div className="split pareto-split">
      <ParetoChart
        title={title}
        filename={filename}
        rows={rows}
        series={series}
        available={available}
        view={view}
        query={query}
        frontier={frontier}
        selected={selected}
        onSelect={onSelect}
        sweepNames={sweepNames}
        legendNote={legendNote}
        controls={<AxisPickers available={available} rows={rows} view={view} query={query} onChange={onChange} />}
      />
      <aside className="panel pareto-side">
        <BoundsControls rows={rows} available={available} view={view} onChange={onChange} />
        {frontier.data && (
          <FrontierList
            frontier={frontier.data}
            view={view}
            selected={selected}
            onSelect={onSelect}
            sweepNames={listSweepNames ? sweepNames : undefined}
          />
        )}
      </aside>
    </div>
  );
}
