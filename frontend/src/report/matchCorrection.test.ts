import { describe, expect, it } from "vitest";
import type { LayerFidelity, LayerProfile } from "../api/types";
import { LAYERS, PROFILE } from "../lib/layerProfileFixtures";
import {
  UNMATCHED,
  applyEdits,
  buildNameMap,
  compressedChoices,
  conflicts,
  filterRows,
  nameMapOf,
  needsReview,
  profileRows,
  unusedCompressed,
  validateEdits,
} from "./matchCorrection";

function at(i: number): LayerFidelity {
  const row = LAYERS[i];
  if (!row) throw new Error(`no fixture layer ${i.toString()}`);
  return row;
}

// Three matched layers (by name, by structure with a low score, through the job's name map given by an alias),
// one golden and one compressed layer left unmatched.
const MATCHED = [
  {
    ...at(1),
    name: "relu",
    compressed_name: "relu_q",
    canonical_id: "conv1",
    aliases: ["relu"],
    match_method: "name",
    match_confidence: 1,
  },
  {
    ...at(2),
    name: "relu_1",
    compressed_name: "t7",
    canonical_id: "conv2",
    aliases: ["relu_1", "node_conv2d_1"],
    match_method: "structure",
    match_confidence: 0.62,
  },
  {
    ...at(4),
    name: "logits",
    compressed_name: "fc_out",
    canonical_id: "fc",
    aliases: ["node_linear"],
    match_method: "name_map",
    match_confidence: 1,
  },
];
const profile: LayerProfile = {
  ...PROFILE,
  layers: MATCHED,
  unmatched_golden: ["pool"],
  unmatched_compressed: ["t9"],
};
const rows = profileRows(profile);
const choices = compressedChoices(profile);
const existing = { fc: "fc_out", other: "x" }; // the job's map names fc by its canonical id

describe("the profile's pairing", () => {
  it("lists matched layers then unmatched golden ones, with every name of each", () => {
    expect(rows.map((r) => [r.golden, r.compressed, r.method])).toEqual([
      ["relu", "relu_q", "name"],
      ["relu_1", "t7", "structure"],
      ["logits", "fc_out", "name_map"],
      ["pool", null, null],
    ]);
    expect(rows[1]?.goldenIds).toEqual(["conv2", "relu_1", "node_conv2d_1"]);
    expect(rows[1]?.label).toBe("conv2");
    expect(choices).toEqual(["relu_q", "t7", "fc_out", "t9"]);
    expect(unusedCompressed(rows, choices)).toEqual(["t9"]);
    expect(conflicts(rows).size).toBe(0);
  });

  it("flags low-confidence structural matches and unmatched layers for review", () => {
    expect(rows.map((r) => needsReview(r))).toEqual([false, true, false, true]);
    expect(filterRows(rows, new Set(), "review", "").map((r) => r.golden)).toEqual(["relu_1", "pool"]);
    expect(filterRows(rows, new Set(), "all", "CONV2D_1").map((r) => r.golden)).toEqual(["relu_1"]);
    expect(filterRows(rows, new Set(["pool"]), "edited", "").map((r) => r.golden)).toEqual(["pool"]);
  });
});

describe("edits", () => {
  it("re-pairs, unmatches and pairs unmatched layers into the name map", () => {
    const edits = new Map<string, string | null>([
      ["relu_1", "t9"], // re-pair with an unmatched compressed layer
      ["pool", "t7"], // pair an unmatched golden layer with the compressed layer that freed up
      ["relu", null], // unmatch a pair
    ]);
    expect(validateEdits(rows, choices, edits)).toEqual([]);
    const after = applyEdits(rows, edits);
    expect(after.map((r) => [r.golden, r.compressed, r.method])).toEqual([
      ["relu", null, null],
      ["relu_1", "t9", "edited"],
      ["logits", "fc_out", "name_map"],
      ["pool", "t7", "edited"],
    ]);
    expect(unusedCompressed(after, choices)).toEqual(["relu_q"]);
    expect(buildNameMap(existing, rows, edits)).toEqual({
      fc: "fc_out",
      other: "x",
      relu_1: "t9",
      pool: "t7",
      relu: UNMATCHED,
    });
  });

  it("replaces the job's entry for a layer even when it names the layer by an alias", () => {
    const edits = new Map<string, string | null>([["logits", "t9"]]);
    expect(buildNameMap(existing, rows, edits)).toEqual({ other: "x", logits: "t9" });
  });

  it("drops edits back to the profile's own pairing", () => {
    const edits = new Map<string, string | null>([
      ["relu", "relu_q"],
      ["pool", null],
    ]);
    expect(buildNameMap(existing, rows, edits)).toEqual(existing);
    expect(validateEdits(rows, choices, edits)).toEqual(["No change to the matching yet."]);
  });

  it("refuses a compressed layer paired twice and unknown compressed layers", () => {
    const twice = new Map<string, string | null>([["pool", "relu_q"]]);
    expect(conflicts(applyEdits(rows, twice))).toEqual(new Map([["relu_q", ["relu", "pool"]]]));
    expect(validateEdits(rows, choices, twice)).toEqual([
      "relu_q is paired with 2 golden layers (relu, pool): pick one.",
    ]);
    // Swapping two pairs is fine once both sides are edited.
    const swap = new Map<string, string | null>([
      ["relu", "t7"],
      ["relu_1", "relu_q"],
    ]);
    expect(validateEdits(rows, choices, swap)).toEqual([]);
    expect(validateEdits(rows, choices, new Map([["pool", "nope"]]))).toEqual([
      "The compressed model has no layer nope (for pool).",
    ]);
  });

  it("reads the job's map from its parameters", () => {
    expect(nameMapOf({ layer_name_map: { a: "b", bad: 3 } })).toEqual({ a: "b" });
    expect(nameMapOf({})).toEqual({});
    expect(nameMapOf({ layer_name_map: ["a"] })).toEqual({});
  });
});
