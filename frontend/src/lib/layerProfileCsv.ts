// The layer profile as CSV rows: one file of SQNRs ("inf" for identical outputs), one of cosines.
import type { LayerFidelity, LayerProfile, LayerStats } from "../api/types";
import type { Cell } from "./csv";
import { layersOf, sqnrOf } from "./layerProfile";
import { layerLabel } from "./layerNames";

export interface CsvData {
  header: string[];
  rows: Cell[][];
}

const ID_COLUMNS = ["depth", "depth_fraction", "layer", "name", "compressed_name", "op_type"];
const idCells = (l: LayerFidelity): Cell[] => [
  l.depth,
  l.depth_fraction,
  layerLabel(l),
  l.name,
  l.compressed_name,
  l.op_type,
];

/** An SQNR for CSV: the number, "inf" for identical outputs (as pandas and numpy read it), or empty. */
function sqnrCell(stats: LayerStats | null): Cell {
  const v = sqnrOf(stats);
  return v === Number.POSITIVE_INFINITY ? "inf" : v;
}

export function sqnrCsv(profile: LayerProfile): CsvData {
  return {
    header: [...ID_COLUMNS, "accumulated_sqnr_db", "local_sqnr_db", "qdq_err_sqnr_db", "local_note"],
    rows: layersOf(profile).map((l) => [
      ...idCells(l),
      sqnrCell(l.accumulated),
      sqnrCell(l.local),
      sqnrCell(l.qdq_err ?? null),
      l.local_note,
    ]),
  };
}

export function cosineCsv(profile: LayerProfile): CsvData {
  return {
    header: [
      ...ID_COLUMNS,
      "accumulated_cosine_mean",
      "accumulated_cosine_min",
      "local_cosine_mean",
      "local_cosine_min",
      "local_note",
    ],
    rows: layersOf(profile).map((l) => [
      ...idCells(l),
      l.accumulated.cosine_mean,
      l.accumulated.cosine_min,
      l.local?.cosine_mean,
      l.local?.cosine_min,
      l.local_note,
    ]),
  };
}
