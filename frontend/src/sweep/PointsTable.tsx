// Every point of a sweep as a table, sorted in the browser (a sweep has at most ~80 points) by any column;
// the sort is in the URL. A click (or Enter on the point's button) selects the point.
import { useMemo } from "react";
import type { FrontierOut } from "../api/types";
import { slug, toCsv } from "../lib/csv";
import { downloadText } from "../lib/download";
import { fidelitySource, fidelitySourceLine } from "../lib/fidelitySource";
import { slowerThanGolden, type SweepRow } from "../lib/sweep";
import { type BoundSpec } from "../lib/sweepBounds";
import { firstOrder, pointsCsv, sortRows, type SortOrder } from "../lib/sweepTable";
import { objectiveInfo, ratioObjective, latencyObjective } from "../lib/sweepObjectives";

/** Column titles: the unit goes in the cells. */
function shortLabel(name: string): string {
  if (name.startsWith("latency_ratio_")) return "vs fp32";
  if (name.startsWith("latency_p50_")) return "p50";
  return (
    {
      top1_agreement: "Top-1",
      accuracy_drop_pp: "Acc. drop",
      compression_ratio: "Ratio",
      runtime_memory_mib: "Memory",
    }[name] ?? objectiveInfo(name).label
  );
}

export function PointsTable({
  rows,
  available,
  frontier,
  specs,
  batch,
  selected,
  sort,
  order,
  onSort,
  onSelect,
  name,
}: {
  rows: readonly SweepRow[];
  available: readonly string[];
  frontier: FrontierOut | null;
  specs: readonly BoundSpec[];
  batch: number | null;
  selected: string | null;
  sort: string;
  order: SortOrder;
  onSort: (sort: string, order: SortOrder) => void;
  onSelect: (id: string) => void;
  name: string;
}) {
  const columns = useMemo(() => {
    const wanted = [
      "kl_mean",
      "top1_agreement",
      "sqnr_db",
      "accuracy_drop_pp",
      "size_bytes",
      "compression_ratio",
      "bops",
      ...(batch === null ? [] : [latencyObjective(batch), ratioObjective(batch)]),
      "runtime_memory_mib",
    ];
    return wanted.filter((n) => available.includes(n));
  }, [available, batch]);
  const key = sort === "index" || sort === "label" || available.includes(sort) ? sort : "index";
  const sorted = useMemo(() => sortRows(rows, key, order), [rows, key, order]);
  const onFrontier = new Set(frontier?.frontier.map((p) => p.id) ?? []);
  const header = (k: string, label: string, num: boolean) => {
    const active = key === k;
    const next: SortOrder = active ? (order === "asc" ? "desc" : "asc") : firstOrder(k);
    return (
      <th
        key={k}
        className={num ? "num" : undefined}
        aria-sort={active ? (order === "asc" ? "ascending" : "descending") : "none"}
      >
        <button
          type="button"
          className="sort"
          onClick={() => {
            onSort(k, next);
          }}
        >
          {label} {active ? (order === "asc" ? "▲" : "▼") : ""}
        </button>
      </th>
    );
  };
  const download = () => {
    const csv = pointsCsv(sorted, { objectives: available, frontier, bounds: specs, slowBatch: batch });
    downloadText(`${slug(`${name} points`)}.csv`, toCsv(csv.header, csv.rows));
  };
  return (
    <section className="panel" aria-labelledby="points-heading">
      <div className="chart-head">
        <h3 id="points-heading">All points</h3>
        <button type="button" className="small" onClick={download} aria-label="Download all points as CSV">
          CSV
        </button>
      </div>
      <div className="scroll">
        <table className="table compact points" aria-labelledby="points-heading">
          <thead>
            <tr>
              {header("index", "#", true)}
              {header("label", "Configuration", false)}
              <th>Runtime</th>
              {columns.map((c) => header(c, shortLabel(c), true))}
              <th>Frontier</th>
            </tr>
          </thead>
          <tbody>
            {sorted.map((r) => {
              const slow = slowerThanGolden(r, batch, rows);
              return (
                <tr
                  key={r.id}
                  data-point={r.index}
                  className={`clickable${r.id === selected ? " selected" : ""}`}
                  aria-selected={r.id === selected}
                  onClick={() => {
                    onSelect(r.id);
                  }}
                >
                  <td className="num">{r.index}</td>
                  <td>
                    <button
                      type="button"
                      className="link"
                      onClick={(e) => {
                        e.stopPropagation();
                        onSelect(r.id);
                      }}
                    >
                      <code>{r.label}</code>
                    </button>
                    <div className="muted small-text">{r.description}</div>
                  </td>
                  <td className="small-text">
                    {r.runtime === "real" ? r.realExport : r.runtime === "simulated" ? "simulated only" : "—"}
                    {fidelitySource(r.point) === "simulated" && (
                      <>
                        {" "}
                        <span
                          className="badge badge-muted simulated-fidelity"
                          title={`Fidelity ${fidelitySourceLine(r.point) ?? "simulated"}`}
                        >
                          sim. fidelity
                        </span>
                      </>
                    )}
                  </td>
                  {columns.map((c) => (
                    <td key={c} className={`num${c === ratioObjective(batch ?? 0) && slow ? " flip" : ""}`}>
                      {objectiveInfo(c).format(r.objectives[c])}
                    </td>
                  ))}
                  <td>{frontier?.knee === r.id ? "★ knee" : onFrontier.has(r.id) ? "✓" : ""}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {batch !== null && (
        <p className="muted small-text">
          p50: latency at batch {batch} in ms; vs fp32: its ratio to the golden model&apos;s (red: slower). Ratio: the
          compression ratio (fp32 size / size).
        </p>
      )}
      {rows.some((r) => fidelitySource(r.point) !== null) && (
        <p className="muted small-text">
          Fidelity columns are measured on each point&apos;s deployed file (the export timed); &quot;sim. fidelity&quot;
          marks the points scored by the simulation (no runnable export).
        </p>
      )}
    </section>
  );
}
