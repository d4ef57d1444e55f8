// Collapsing repeated blocks: nodes sharing a module-path prefix (group_path) are drawn as one box until the
// user expands it, so a 500-node model starts as a few dozen boxes.
import type { GraphNode, ModelGraph, VisibleGraph, VisibleItem } from "./types";

export const GROUP_PREFIX = "group:";

/** Groups worth a box: prefixes with ≥ 2 nodes whose member set differs from their parent prefix's (so
 * "encoder" → "encoder.layer" → "encoder.layer.0" does not need three clicks for the same nodes). */
export function groupSizes(nodes: GraphNode[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const node of nodes) for (const prefix of node.group_path) counts.set(prefix, (counts.get(prefix) ?? 0) + 1);
  const groups = new Map<string, number>();
  for (const node of nodes) {
    let parentCount = Infinity;
    for (const prefix of node.group_path) {
      const count = counts.get(prefix) ?? 0;
      if (count >= 2 && count < parentCount) groups.set(prefix, count);
      parentCount = count;
    }
  }
  return groups;
}

/** The group a node is drawn in: its outermost real group that is not expanded; null when all are. */
export function collapsedGroupOf(node: GraphNode, groups: Map<string, number>, expanded: Set<string>): string | null {
  for (const prefix of node.group_path) {
    if (groups.has(prefix) && !expanded.has(prefix)) return prefix;
  }
  return null;
}

/** The expanded set to start from: everything when the graph is small, else nothing (top-level groups). */
export function initialExpanded(graph: ModelGraph, maxBoxes = 150): Set<string> {
  const groups = groupSizes(graph.nodes);
  return graph.nodes.length <= maxBoxes ? new Set(groups.keys()) : new Set();
}

/** Every group enclosing `nodeId` (to expand them when a search finds it). */
export function groupsEnclosing(graph: ModelGraph, nodeId: string): string[] {
  const node = graph.nodes.find((n) => n.id === nodeId);
  return node ? [...node.group_path] : [];
}

/** node id → the box drawing it now: the node itself, or the collapsed group holding it. */
export function boxIds(graph: ModelGraph, expanded: Set<string>): Map<string, string> {
  const groups = groupSizes(graph.nodes);
  const out = new Map<string, string>();
  for (const node of graph.nodes) {
    const group = collapsedGroupOf(node, groups, expanded);
    out.set(node.id, group === null ? node.id : GROUP_PREFIX + group);
  }
  return out;
}

export function visibleGraph(graph: ModelGraph, expanded: Set<string>): VisibleGraph {
  const groups = groupSizes(graph.nodes);
  const itemOf = new Map<string, string>();
  const items = new Map<string, VisibleItem>();
  for (const node of graph.nodes) {
    const group = collapsedGroupOf(node, groups, expanded);
    const id = group === null ? node.id : GROUP_PREFIX + group;
    itemOf.set(node.id, id);
    const item = items.get(id);
    if (item) item.members.push(node);
    else
      items.set(id, {
        id,
        kind: group === null ? "node" : "group",
        label: group ?? node.id,
        opType: group === null ? node.op_type : "",
        members: [node],
      });
  }
  for (const item of items.values()) {
    if (item.kind === "group") item.opType = `${item.members.length} nodes`;
  }
  const seen = new Set<string>();
  const edges: VisibleGraph["edges"] = [];
  for (const edge of graph.edges) {
    const source = itemOf.get(edge.source);
    const target = itemOf.get(edge.target);
    if (!source || !target || source === target) continue;
    const key = `${source}\u0000${target}`;
    if (seen.has(key)) continue;
    seen.add(key);
    edges.push({ source, target });
  }
  return { items: [...items.values()], edges };
}

/** Nodes whose id or any alias matches `query`: exact matches first, then substrings (case-insensitive). */
export function searchNodes(graph: ModelGraph, query: string, limit = 20): GraphNode[] {
  const q = query.trim().toLowerCase();
  if (q === "") return [];
  const names = (n: GraphNode) => [n.id, ...n.aliases, n.module_path ?? ""].map((s) => s.toLowerCase());
  const exact = graph.nodes.filter((n) => names(n).includes(q));
  const partial = graph.nodes.filter((n) => !exact.includes(n) && names(n).some((s) => s.includes(q)));
  return [...exact, ...partial].slice(0, limit);
}
