import { describe, expect, it } from "vitest";
import { aliasText, layerAliases, layerLabel } from "./layerNames";

describe("layer names", () => {
  const fused = {
    name: "relu_1",
    canonical_id: "conv2",
    compressed_name: "relu_1",
    aliases: ["node_Conv_3", "conv2.weight", "relu_1"],
  };

  it("shows the canonical id and keeps the other names as aliases, once each", () => {
    expect(layerLabel(fused)).toBe("conv2");
    expect(layerAliases(fused)).toEqual(["relu_1", "node_Conv_3", "conv2.weight"]);
    expect(aliasText(fused)).toBe("also: relu_1, node_Conv_3, conv2.weight");
  });

  it("falls back to the row's name for profiles stored before layer identity", () => {
    const old = { name: "fc", canonical_id: null, compressed_name: "fc", aliases: null };
    expect(layerLabel(old)).toBe("fc");
    expect(layerAliases(old)).toEqual([]);
    expect(aliasText(old)).toBe("");
  });

  it("says how many aliases it left out", () => {
    const many = { name: "x", canonical_id: "m", aliases: ["a", "b", "c"] };
    expect(aliasText(many, 2)).toBe("also: x, a, … (2 more)");
  });
});
