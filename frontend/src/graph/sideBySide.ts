// Side-by-side graphs of a fidelity job: which golden graph node is paired with which compressed one, and
// which layers the matching left unmatched. Pure functions over the two graphs and the job's layer pairing.
import { nameIndex } from "./metrics";
import type { ModelGraph } from "./types";

/** One golden layer and what it is paired with (a profile row, or a pending correction). */
export interface LayerPairing {
  /** The golden layer's names, best first: its canonical id (so a fused Conv+ReLU row links the Conv node,
   * the layer, not the ReLU whose output tensor the profile compares), then tensor name and aliases. */
  goldenIds: string[];
  compressed: string | null;
  method: string | null;
  confidence: number | null;
}

export interface NodeLink {
  golden: string;
  compressed: string;
  method: string | null;
  confidence: number | null;
}

export interface GraphLinks {
  links: NodeLink[];
  /** node id → its link, one map per side. */
  byGolden: Map<string, NodeLink>;
  byCompressed: Map<string, NodeLink>;
  /** Nodes of layers the matching left unmatched (the profile's unmatched lists, and unmatched rows). */
  unmatchedGolden: Set<string>;
  unmatchedCompressed: Set<string>;
  /** Pairings whose layers have no node in the graphs (e.g. a graph input, or a torch model). */
  unplaced: number;
}

/** name → node id: the graph's own names (ids, aliases, module paths), then every tensor an edge carries →
 * the node producing it (a dequantized copy of a tensor names its producer: the QDQ pair is folded). */
export function tensorIndex(graph: ModelGraph): Map<string, string> {
  const index = nameIndex(graph.nodes);
  for (const edge of graph.edges) if (!index.has(edge.tensor)) index.set(edge.tensor, edge.source);
  return index;
}

function find(index: Map<string, string>, names: readonly string[]): string | undefined {
  for (const name of names) {
    const id = index.get(name);
    if (id !== undefined && !id.startsWith("input:") && !id.startsWith("output:")) return id;
  }
  return undefined;
}

/** The links between the two graphs' nodes. A node paired twice (two profile rows on one node, e.g. a conv's
 * pre-activation tensor and its fused ReLU's output) keeps the first link. */
export function linkGraphs(
  golden: ModelGraph,
  compressed: ModelGraph,
  pairings: readonly LayerPairing[],
  unmatchedGolden: readonly string[],
  unmatchedCompressed: readonly string[],
): GraphLinks {
  const g = tensorIndex(golden);
  const c = tensorIndex(compressed);
  const out: GraphLinks = {
    links: [],
    byGolden: new Map(),
    byCompressed: new Map(),
    unmatchedGolden: new Set(),
    unmatchedCompressed: new Set(),
    unplaced: 0,
  };
  const unmatchedC = new Set(unmatchedCompressed);
  for (const pairing of pairings) {
    const gid = find(g, pairing.goldenIds);
    if (pairing.compressed === null) {
      if (gid !== undefined) out.unmatchedGolden.add(gid);
      continue;
    }
    const cid = find(c, [pairing.compressed]);
    if (gid === undefined || cid === undefined) {
      out.unplaced += 1;
      continue;
    }
    if (out.byGolden.has(gid) || out.byCompressed.has(cid)) continue;
    const link = { golden: gid, compressed: cid, method: pairing.method, confidence: pairing.confidence };
    out.links.push(link);
    out.byGolden.set(gid, link);
    out.byCompressed.set(cid, link);
  }
  for (const name of unmatchedGolden) {
    const id = find(g, [name]);
    if (id !== undefined && !out.byGolden.has(id)) out.unmatchedGolden.add(id);
  }
  for (const name of unmatchedC) {
    const id = find(c, [name]);
    if (id !== undefined && !out.byCompressed.has(id)) out.unmatchedCompressed.add(id);
  }
  for (const id of out.byGolden.keys()) out.unmatchedGolden.delete(id);
  return out;
}

/** A layer the matching can pair: its key (the name a name map uses) and every name it goes by. */
export interface LayerNames {
  key: string;
  names: readonly string[];
}

/** node id → the layers drawn as that node, in `layers` order (pairing by clicking in the graphs turns the two
 * clicked nodes back into layers). A node can stand for several layers: a conv's pre-activation tensor and
 * its fused ReLU's output are both the conv node. */
export function layersAtNode(graph: ModelGraph, layers: readonly LayerNames[]): Map<string, string[]> {
  const index = tensorIndex(graph);
  const out = new Map<string, string[]>();
  for (const layer of layers) {
    const id = find(index, layer.names);
    if (id === undefined) continue;
    const list = out.get(id);
    if (list) list.push(layer.key);
    else out.set(id, [layer.key]);
  }
  return out;
}

/** Fill of a linked node: green for a name match or the user's map, amber to red as a structural score falls
 * (a score under 0.5 is a guess), blue for a pending correction. */
export function linkFill(link: NodeLink): string {
  if (link.method === "edited") return "#9ec5fe";
  if (link.method === "structure" || link.method === "weights") {
    const score = link.confidence ?? 0;
    return score >= 0.8 ? "#c7e9c0" : score >= 0.5 ? "#fdd49e" : "#fc9272";
  }
  return "#a1d99b";
}

export const UNMATCHED_FILL = "#ffffff";
