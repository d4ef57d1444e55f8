// The model graph as GET /models/{id}/graph serves it, and what the view derives from it.
import type { components } from "../client/schema";

export type ModelGraph = components["schemas"]["ModelGraphOut"];
export type GraphNode = components["schemas"]["GraphNodeOut"];
export type GraphEdge = components["schemas"]["GraphEdgeOut"];

/** A box on the canvas: one graph node, or a collapsed group of nodes sharing a module-path prefix. */
export interface VisibleItem {
  id: string;
  kind: "node" | "group";
  label: string;
  opType: string;
  /** The graph nodes it stands for (one for a node). */
  members: GraphNode[];
}

export interface VisibleGraph {
  items: VisibleItem[];
  edges: { source: string; target: string }[];
}
