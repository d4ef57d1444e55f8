import { describe, expect, it } from "vitest";
import { groupSizes, initialExpanded, searchNodes, visibleGraph } from "./collapse";
import { colourOf, graphMetric, itemValue, nameIndex } from "./metrics";
import type { GraphNode, ModelGraph } from "./types";

function node(id: string, module: string | null, extra: Partial<GraphNode> = {}): GraphNode {
  const parts = module ? module.split(".") : [];
  return {
    id,
    kind: "op",
    op_type: "Gemm",
    aliases: [`node_${id}`],
    module_path: module,
    group_path: parts.map((_, i) => parts.slice(0, i + 1).join(".")),
    quantized: false,
    params: 10,
    macs: 100,
    ...extra,
  };
}

/** blocks.0..n-1, each a linear and an act, chained; input and output nodes around. */
function chain(blocks: number): ModelGraph {
  const nodes: GraphNode[] = [node("input:x", null, { kind: "input", params: 0, macs: null })];
  for (let i = 0; i < blocks; i++) {
    nodes.push(node(`blocks.${i}.linear`, `blocks.${i}.linear`));
    nodes.push(node(`blocks.${i}.act`, `blocks.${i}.act`, { op_type: "Relu", params: 0, macs: 0 }));
  }
  nodes.push(node("output:y", null, { kind: "output", params: 0, macs: null }));
  const edges = nodes
    .slice(1)
    .map((n, i) => ({ source: nodes[i]?.id ?? "", target: n.id, tensor: "t", quantized: false }));
  return { model_id: "m", format: "onnx", nodes, edges, notes: [] };
}

describe("collapsing module groups", () => {
  it("makes groups of shared prefixes with two or more nodes, not of single modules", () => {
    const groups = groupSizes(chain(3).nodes);
    expect([...groups.entries()].sort()).toEqual([
      ["blocks", 6],
      ["blocks.0", 2],
      ["blocks.1", 2],
      ["blocks.2", 2],
    ]);
  });

  it("draws a collapsed group as one box with the edges around it", () => {
    const graph = chain(250);
    expect(initialExpanded(graph).size).toBe(0); // 502 nodes: start collapsed
    const top = visibleGraph(graph, new Set());
    expect(top.items.map((i) => i.id)).toEqual(["input:x", "group:blocks", "output:y"]);
    expect(top.items[1]?.members).toHaveLength(500);
    expect(top.edges).toEqual([
      { source: "input:x", target: "group:blocks" },
      { source: "group:blocks", target: "output:y" },
    ]);
    const one = visibleGraph(graph, new Set(["blocks", "blocks.7"]));
    expect(one.items).toHaveLength(2 + 249 + 2);
    expect(one.edges).toHaveLength(one.items.length - 1); // still a chain
    expect(one.edges).toContainEqual({ source: "group:blocks.6", target: "blocks.7.linear" });
  });

  it("finds nodes by id, alias or substring, exact matches first", () => {
    const graph = chain(12);
    expect(searchNodes(graph, "node_blocks.1.act").map((n) => n.id)).toEqual(["blocks.1.act"]);
    expect(searchNodes(graph, "BLOCKS.1.LINEAR")[0]?.id).toBe("blocks.1.linear");
    expect(searchNodes(graph, "blocks.1").map((n) => n.id)).toContain("blocks.11.act");
    expect(searchNodes(graph, "nothing-like-it")).toEqual([]);
  });
});

describe("metrics on the graph", () => {
  it("sums counts over a group and colours the ends of the scale", () => {
    const graph = chain(4);
    const params = graphMetric(graph.nodes, "params");
    expect(params.values.size).toBe(4); // the linears; activations own none
    const group = visibleGraph(graph, new Set()).items[1];
    expect(group && itemValue(group, params, true)).toBe(40);
    expect(colourOf(1, 1, 9, true, false)).toBe("#3b4cc0");
    expect(colourOf(9, 1, 9, true, false)).toBe("#b40426");
    expect(colourOf(9, 1, 9, false, false)).toBe("#3b4cc0"); // higher SQNR is better: cool
  });

  it("resolves any alias to the canonical id", () => {
    const index = nameIndex(chain(2).nodes);
    expect(index.get("node_blocks.1.act")).toBe("blocks.1.act");
    expect(index.get("blocks.0.linear")).toBe("blocks.0.linear");
  });
});
