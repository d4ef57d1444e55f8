import { describe, expect, it } from "vitest";
import { layersAtNode, linkFill, linkGraphs, tensorIndex, type LayerPairing } from "./sideBySide";
import type { GraphNode, ModelGraph } from "./types";

function node(id: string, aliases: string[], kind: GraphNode["kind"] = "op"): GraphNode {
  return {
    id,
    kind,
    op_type: "Conv",
    aliases,
    module_path: null,
    group_path: [],
    quantized: false,
    params: 1,
    macs: 1,
  };
}

function graph(nodes: GraphNode[], edges: [string, string, string][]): ModelGraph {
  return {
    model_id: "m",
    format: "onnx",
    nodes,
    edges: edges.map(([source, target, tensor]) => ({ source, target, tensor, quantized: false })),
    notes: [],
  };
}

// The golden CNN: conv1 (output relu) → conv2 (relu_1) → fc (logits). Its int8 copy renamed: op0 → op1 → op2,
// each output re-quantized, the consumers reading the dequantized copies t0_dq / t1_dq.
const golden = graph(
  [node("input:x", [], "input"), node("conv1", ["relu"]), node("conv2", ["relu_1"]), node("fc", ["logits"])],
  [
    ["input:x", "conv1", "x"],
    ["conv1", "conv2", "relu"],
    ["conv2", "fc", "relu_1"],
  ],
);
const compressed = graph(
  [
    node("input:x", [], "input"),
    node("op0", ["t0"]),
    node("op1", ["t1"]),
    node("op2", ["logits"]),
    node("op3", ["t3"]),
  ],
  [
    ["input:x", "op0", "x"],
    ["op0", "op1", "t0_dq"],
    ["op1", "op2", "t1_dq"],
    ["op2", "op3", "logits"],
  ],
);

describe("linking the golden and compressed graphs", () => {
  it("finds a dequantized tensor's producer through the edges", () => {
    const index = tensorIndex(compressed);
    expect(index.get("t0_dq")).toBe("op0");
    expect(index.get("t1")).toBe("op1");
  });

  it("links pairs by any golden name and the compressed tensor, and marks the unmatched", () => {
    const pairings: LayerPairing[] = [
      { goldenIds: ["x"], compressed: "x", method: "name", confidence: 1 }, // a graph input: no op node
      { goldenIds: ["conv1", "relu"], compressed: "t0_dq", method: "structure", confidence: 0.9 },
      { goldenIds: ["relu_1"], compressed: null, method: null, confidence: null },
      { goldenIds: ["fc"], compressed: "logits", method: "name", confidence: 1 },
    ];
    const links = linkGraphs(golden, compressed, pairings, [], ["t1_dq", "t3"]);
    expect(links.links.map((l) => [l.golden, l.compressed])).toEqual([
      ["conv1", "op0"],
      ["fc", "op2"],
    ]);
    expect(links.byCompressed.get("op2")?.golden).toBe("fc");
    expect([...links.unmatchedGolden]).toEqual(["conv2"]);
    expect([...links.unmatchedCompressed].sort()).toEqual(["op1", "op3"]);
    expect(links.unplaced).toBe(1);
  });

  it("keeps the first link of a node paired twice", () => {
    const pairings: LayerPairing[] = [
      { goldenIds: ["conv1"], compressed: "t0", method: "name", confidence: 1 },
      { goldenIds: ["relu"], compressed: "t0_dq", method: "name", confidence: 1 },
    ];
    const links = linkGraphs(golden, compressed, pairings, ["relu"], []);
    expect(links.links).toHaveLength(1);
    expect(links.unmatchedGolden.size).toBe(0); // conv1 is linked, whatever the unmatched list says
  });

  it("colours links by how sure the matching is", () => {
    const fill = (method: string | null, confidence: number | null) =>
      linkFill({ golden: "a", compressed: "b", method, confidence });
    expect(fill("name", 1)).toBe(fill("name_map", 1));
    expect(
      new Set([fill("structure", 0.9), fill("structure", 0.6), fill("structure", 0.3), fill("edited", null)]).size,
    ).toBe(4);
  });

  it("turns clicked nodes back into the layers they stand for", () => {
    // conv1 is two profile rows (its pre-activation tensor and relu); a graph input and an unknown name are none.
    const golden_ = layersAtNode(golden, [
      { key: "conv2d", names: ["conv1"] },
      { key: "relu", names: ["relu"] },
      { key: "x", names: ["x"] },
      { key: "gone", names: ["nowhere"] },
    ]);
    expect(golden_.get("conv1")).toEqual(["conv2d", "relu"]);
    expect(golden_.has("input:x")).toBe(false);
    expect([...golden_.keys()]).toEqual(["conv1"]);
    const compressed_ = layersAtNode(compressed, [
      { key: "t0_dq", names: ["t0_dq"] },
      { key: "logits", names: ["logits"] },
    ]);
    expect(compressed_.get("op0")).toEqual(["t0_dq"]);
    expect(compressed_.get("op2")).toEqual(["logits"]);
  });
});
