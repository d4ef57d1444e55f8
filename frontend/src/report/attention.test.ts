import { describe, expect, it } from "vitest";
import { formatNumber } from "../lib/format";
import {
  ATTENTION_CSV_HEADER,
  attentionCsvRows,
  attentionHeatmap,
  worstHead,
  type FidelityAttention,
} from "./attention";

const doc: FidelityAttention = {
  job_id: "j",
  heads: 3,
  n_samples: 4,
  n_queries: 30,
  mask_input: "attention_mask",
  notes: [],
  error: null,
  layers: [
    {
      golden_node: "sm0",
      compressed_node: "c0",
      kl: [0.01, 0.002, 0.5],
      js: [0.002, 0.0004, 0.09],
      kl_infinite: [false, false, false],
    },
    // head 1's KL is +∞ (stored null with its flag); head 2's is undefined (null, no flag).
    {
      golden_node: "sm1",
      compressed_node: "c1",
      kl: [0.03, null, null],
      js: [0.007, 0.2, null],
      kl_infinite: [false, true, false],
    },
  ],
};

describe("attentionHeatmap", () => {
  it("lays out layers as rows and heads as columns, with the KL in the cells", () => {
    const view = attentionHeatmap(doc, "kl");
    expect(view.heads).toEqual(["head 0", "head 1", "head 2"]);
    expect(view.layers).toEqual(["L0 · sm0", "L1 · sm1"]);
    expect(view.z).toEqual([
      [0.01, 0.002, 0.5],
      [0.03, null, null],
    ]);
    expect(view.text[0]).toEqual(doc.layers[0]?.kl.map((v) => formatNumber(v, 2)));
    expect(view.text[1]).toEqual([formatNumber(0.03, 2), "∞", formatNumber(null, 2)]);
    expect(view.zmax).toBe(0.5);
  });

  it("toggles to Jensen–Shannon, where no value is infinite", () => {
    const view = attentionHeatmap(doc, "js");
    expect(view.z).toEqual([
      [0.002, 0.0004, 0.09],
      [0.007, 0.2, null],
    ]);
    expect(view.text[1]?.[1]).toBe(formatNumber(0.2, 2));
    expect(view.zmax).toBe(0.2);
  });

  it("has an empty scale when nothing is finite", () => {
    const layer = {
      golden_node: "s",
      compressed_node: "c",
      kl: [null, null],
      js: [null, null],
      kl_infinite: [false, true],
    };
    const empty: FidelityAttention = { ...doc, heads: 2, layers: [layer] };
    expect(attentionHeatmap(empty, "kl").zmax).toBe(0);
    expect(worstHead(empty, "kl")).toBeNull();
  });
});

describe("attention CSV and worst head", () => {
  it("writes one row per layer × head with both metrics", () => {
    const rows = attentionCsvRows(doc);
    expect(rows).toHaveLength(6);
    expect(rows.every((r) => r.length === ATTENTION_CSV_HEADER.length)).toBe(true);
    expect(rows[4]).toEqual([1, "sm1", "c1", 1, null, true, 0.2]);
  });

  it("finds the largest finite value", () => {
    expect(worstHead(doc, "kl")).toEqual({ layer: 0, head: 2, value: 0.5 });
    expect(worstHead(doc, "js")).toEqual({ layer: 1, head: 1, value: 0.2 });
  });
});
