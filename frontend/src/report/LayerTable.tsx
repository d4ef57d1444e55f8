// The matched layers of a per-layer profile as a table, sorted in the browser (a profile has at most a few
// hundred layers); the layer that adds the most error is marked. Under it, the layer matching and its
// correction (MatchCorrection), for the report's job.
import { useMemo, useState } from "react";
import type { LayerFidelity } from "../api/types";
import { useRoute } from "../components/router";
import { formatCosine, formatSqnr } from "../lib/layerProfile";
import { sortLayers, type LayerSortKey, type SortOrder } from "../lib/layerProfileSort";
import { MatchCorrection } from "./MatchCorrection";
import { aliasText, layerLabel } from "../lib/layerNames";

const COLUMNS: { key: LayerSortKey; label: string; numeric?: boolean; title?: string }[] = [
  { key: "depth", label: "Depth", numeric: true },
  { key: "name", label: "Layer" },
  { key: "op_type", label: "Op" },
  {
    key: "accumulated_sqnr",
    label: "Accumulated SQNR (dB)",
    numeric: true,
    title: "Error carried up to this layer; higher is better",
  },
  {
    key: "local_sqnr",
    label: "Local SQNR (dB)",
    numeric: true,
    title: "Error this layer adds alone; higher is better",
  },
  { key: "accumulated_cosine", label: "Accumulated cosine", numeric: true, title: "Higher is better" },
  { key: "local_cosine", label: "Local cosine", numeric: true, title: "Higher is better" },
];

/** Numbers read best from high to low first; names from A to Z. */
const FIRST_ORDER = (key: LayerSortKey): SortOrder =>
  key === "name" || key === "op_type" || key === "depth" ? "asc" : "desc";

export function LayerTable({ layers, worst }: { layers: LayerFidelity[]; worst: LayerFidelity | null }) {
  const [sort, setSort] = useState<{ key: LayerSortKey; order: SortOrder }>({ key: "depth", order: "asc" });
  const rows = useMemo(() => sortLayers(layers, sort.key, sort.order), [layers, sort]);
  // The table is drawn by the report page only; its job is the route's (the rows do not carry it).
  const route = useRoute();
  return (
    <>
      <section className="panel" aria-labelledby="layer-table-heading">
        <h3 id="layer-table-heading">Matched layers</h3>
        <div className="scroll scroll-y">
          <table className="table compact layer-table" aria-labelledby="layer-table-heading">
            <thead>
              <tr>
                {COLUMNS.map((c) => {
                  const active = sort.key === c.key;
                  const next: SortOrder = active ? (sort.order === "asc" ? "desc" : "asc") : FIRST_ORDER(c.key);
                  return (
                    <th
                      key={c.key}
                      className={c.numeric ? "num" : undefined}
                      title={c.title}
                      aria-sort={active ? (sort.order === "asc" ? "ascending" : "descending") : "none"}
                    >
                      <button
                        type="button"
                        className="sort"
                        onClick={() => {
                          setSort({ key: c.key, order: next });
                        }}
                      >
                        {c.label} {active ? (sort.order === "asc" ? "▲" : "▼") : ""}
                      </button>
                    </th>
                  );
                })}
              </tr>
            </thead>
            <tbody>
              {rows.map((l) => {
                const isWorst = l === worst;
                return (
                  <tr
                    key={`${l.depth.toString()}:${l.name}`}
                    className={isWorst ? "worst" : undefined}
                    data-layer={l.name}
                  >
                    <td className="num">{l.depth}</td>
                    <td>
                      <code title={aliasText(l) || undefined}>{layerLabel(l)}</code>
                      {isWorst && (
                        <>
                          {" "}
                          <span className="badge badge-bad">adds the most error</span>
                        </>
                      )}
                      {l.local_note && <div className="muted small-text">local: {l.local_note}</div>}
                    </td>
                    <td>{l.op_type}</td>
                    <td className="num">{formatSqnr(l.accumulated, "")}</td>
                    <td className={`num${isWorst ? " flip" : ""}`}>{formatSqnr(l.local, "")}</td>
                    <td className="num">{formatCosine(l.accumulated)}</td>
                    <td className="num">{formatCosine(l.local)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        <p className="muted small-text">
          ∞: the compressed and golden outputs are identical. —: the value could not be computed (e.g. a tensor that is
          not batch-first, or a layer that cannot run alone).
        </p>
      </section>
      {route.page === "report" && <MatchCorrection jobId={route.jobId} />}
    </>
  );
}
