// Sorting the layer profile's table by a column.
import type { LayerFidelity } from "../api/types";
import { cosineOf, sqnrOf } from "./layerProfile";
import { layerLabel } from "./layerNames";

export type LayerSortKey =
  "depth" | "name" | "op_type" | "accumulated_sqnr" | "local_sqnr" | "accumulated_cosine" | "local_cosine";
export type SortOrder = "asc" | "desc";

function sortValue(layer: LayerFidelity, key: LayerSortKey): number | string | null {
  switch (key) {
    case "depth":
      return layer.depth;
    case "name":
      return layerLabel(layer);
    case "op_type":
      return layer.op_type;
    case "accumulated_sqnr":
      return sqnrOf(layer.accumulated);
    case "local_sqnr":
      return sqnrOf(layer.local);
    case "accumulated_cosine":
      return cosineOf(layer.accumulated);
    case "local_cosine":
      return cosineOf(layer.local);
  }
}

/** Layers sorted by a column; missing values last in either order, ties by depth. ∞ sorts above every number. */
export function sortLayers(layers: readonly LayerFidelity[], key: LayerSortKey, order: SortOrder): LayerFidelity[] {
  const sign = order === "asc" ? 1 : -1;
  return [...layers].sort((a, b) => {
    const va = sortValue(a, key);
    const vb = sortValue(b, key);
    if (va === null || vb === null) {
      if (va !== vb) return va === null ? 1 : -1;
      return a.depth - b.depth;
    }
    const cmp =
      typeof va === "number" && typeof vb === "number"
        ? va === vb
          ? 0
          : va < vb
            ? -1
            : 1
        : String(va).localeCompare(String(vb));
    return cmp === 0 ? a.depth - b.depth : sign * cmp;
  });
}
