import { describe, expect, it } from "vitest";
import type { LayerFidelity } from "../api/types";
import { LAYERS } from "./layerProfileFixtures";
import { sortLayers } from "./layerProfileSort";

describe("sortLayers", () => {
  const depths = (layers: LayerFidelity[]) => layers.map((l) => l.depth);

  it("sorts by local SQNR with ∞ above every number and missing values last", () => {
    expect(depths(sortLayers(LAYERS, "local_sqnr", "asc"))).toEqual([1, 4, 3, 0, 2]);
    expect(depths(sortLayers(LAYERS, "local_sqnr", "desc"))).toEqual([0, 3, 4, 1, 2]);
  });

  it("keeps missing accumulated values last and breaks ties by depth", () => {
    expect(depths(sortLayers(LAYERS, "accumulated_cosine", "desc"))).toEqual([0, 1, 2, 4, 3]);
    expect(depths(sortLayers(LAYERS, "op_type", "asc"))).toEqual([1, 2, 3, 4, 0]);
  });

  it("does not change its input", () => {
    const copy = [...LAYERS];
    sortLayers(LAYERS, "name", "desc");
    expect(LAYERS).toEqual(copy);
  });
});
