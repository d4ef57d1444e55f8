// Layered DAG layout (dagre) of the visible boxes, top to bottom. Layouts are cached per visible graph, so
// expanding a group and collapsing it again, or recolouring, never lays out twice.
import dagre, { type EdgeLabel, type GraphLabel, type NodeLabel } from "@dagrejs/dagre";
import type { VisibleGraph } from "./types";

export interface Placed {
  id: string;
  x: number; // centre
  y: number;
  width: number;
  height: number;
}

export interface Layout {
  boxes: Map<string, Placed>;
  edges: { source: string; target: string; points: { x: number; y: number }[] }[];
  width: number;
  height: number;
  /** Milliseconds dagre took (0 when the layout came from the cache). */
  ms: number;
}

const BOX_HEIGHT = 38;
const CHAR_WIDTH = 7;
const cache = new Map<string, Layout>();
const CACHE_SIZE = 30;

export function boxWidth(label: string): number {
  return Math.min(240, Math.max(90, 24 + CHAR_WIDTH * label.length));
}

function cacheKey(graphKey: string, visible: VisibleGraph): string {
  return `${graphKey}|${visible.items.map((i) => i.id).join(",")}`;
}

export function layoutGraph(graphKey: string, visible: VisibleGraph): Layout {
  const key = cacheKey(graphKey, visible);
  const hit = cache.get(key);
  if (hit) return { ...hit, ms: 0 };
  const started = performance.now();
  const g = new dagre.graphlib.Graph<GraphLabel, NodeLabel, EdgeLabel>();
  g.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const item of visible.items) g.setNode(item.id, { width: boxWidth(item.label), height: BOX_HEIGHT });
  for (const edge of visible.edges) g.setEdge(edge.source, edge.target);
  dagre.layout(g);
  const boxes = new Map<string, Placed>();
  for (const item of visible.items) {
    const n = g.node(item.id);
    boxes.set(item.id, { id: item.id, x: n.x ?? 0, y: n.y ?? 0, width: n.width, height: n.height });
  }
  const edges = visible.edges.map((e) => ({ ...e, points: g.edge(e.source, e.target).points ?? [] }));
  const label = g.graph();
  const layout: Layout = { boxes, edges, width: label.width ?? 0, height: label.height ?? 0, ms: 0 };
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  cache.set(key, layout);
  return { ...layout, ms: performance.now() - started };
}
