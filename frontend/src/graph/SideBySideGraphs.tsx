// A fidelity job's golden and compressed graphs side by side, linked by the job's layer matching: clicking a
// node selects it and its match in the other graph (revealed and centred there); unmatched layers have a
// dashed red outline; fills say how sure the match is. Used by the model page's graph section and the report's
// match correction (which passes the pending corrections as pairings, and takes new pairs clicked in the
// graphs). Lines join each linked pair of boxes on screen (LinkLines.tsx).
import { useMemo, useRef, useState, type RefObject } from "react";
import { useLayerProfile } from "../api/fidelity";
import type { Job } from "../api/types";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { formatPercent } from "../lib/format";
import { profileRows } from "../report/matchCorrection";
import { GROUP_PREFIX, boxIds, collapsedGroupOf, groupSizes, initialExpanded, visibleGraph } from "./collapse";
import { GraphCanvas, type CanvasHandle } from "./GraphCanvas";
import "./graph.css";
import { layoutGraph } from "./layout";
import { LinkLines, type LinesHandle } from "./LinkLines";
import { boxPairs } from "./linkLines";
import { PairByClicking, type ClickPairing, type Side } from "./PairByClicking";
import { useModelGraph } from "./queries";
import { UNMATCHED_FILL, linkFill, linkGraphs, type GraphLinks, type LayerPairing } from "./sideBySide";
import type { ModelGraph, VisibleItem } from "./types";

interface Props {
  goldenModelId: string;
  compressedModelId: string;
  pairings: LayerPairing[];
  unmatchedGolden: readonly string[];
  unmatchedCompressed: readonly string[];
  pairing?: ClickPairing;
}

/** The side-by-side graphs of a fidelity job, linked by its stored profile's matching. */
export function FidelitySideBySide({ job }: { job: Job }) {
  const profile = useLayerProfile(job.id, true);
  const pairings = useMemo(() => (profile.data ? profileRows(profile.data) : []), [profile.data]);
  if (profile.isPending) return <Loading what="the job's layer matching" />;
  if (profile.isError) return <ErrorMessage error={profile.error} />;
  return (
    <SideBySideGraphs
      goldenModelId={String(job.params["golden_model_id"])}
      compressedModelId={String(job.params["compressed_model_id"])}
      pairings={pairings}
      unmatchedGolden={profile.data.unmatched_golden ?? []}
      unmatchedCompressed={profile.data.unmatched_compressed ?? []}
    />
  );
}

export function SideBySideGraphs({
  goldenModelId,
  compressedModelId,
  pairings,
  unmatchedGolden,
  unmatchedCompressed,
  pairing,
}: Props) {
  const golden = useModelGraph(goldenModelId, true);
  const compressed = useModelGraph(compressedModelId, true);
  if (golden.isPending || compressed.isPending) return <Loading what="the two graphs" />;
  if (golden.isError) return <ErrorMessage error={golden.error} />;
  if (compressed.isError) return <ErrorMessage error={compressed.error} />;
  if (golden.data.nodes.length === 0 || compressed.data.nodes.length === 0)
    return <Empty>{[...golden.data.notes, ...compressed.data.notes].join(" ") || "A graph has no nodes."}</Empty>;
  return (
    <LinkedGraphs
      golden={golden.data}
      compressed={compressed.data}
      pairings={pairings}
      unmatchedGolden={unmatchedGolden}
      unmatchedCompressed={unmatchedCompressed}
      pairing={pairing}
    />
  );
}

interface Selection {
  side: Side;
  node: string;
}

const OTHER: Record<Side, Side> = { golden: "compressed", compressed: "golden" };

function LinkedGraphs({
  golden,
  compressed,
  pairings,
  unmatchedGolden,
  unmatchedCompressed,
  pairing,
}: { golden: ModelGraph; compressed: ModelGraph } & Omit<Props, "goldenModelId" | "compressedModelId">) {
  const links = useMemo(
    () => linkGraphs(golden, compressed, pairings, unmatchedGolden, unmatchedCompressed),
    [golden, compressed, pairings, unmatchedGolden, unmatchedCompressed],
  );
  const graphs: Record<Side, ModelGraph> = { golden, compressed };
  const [expanded, setExpanded] = useState<Record<Side, Set<string>>>(() => ({
    golden: initialExpanded(golden),
    compressed: initialExpanded(compressed),
  }));
  const goldenCanvas = useRef<CanvasHandle>(null);
  const compressedCanvas = useRef<CanvasHandle>(null);
  const canvases = { golden: goldenCanvas, compressed: compressedCanvas };
  const pair = useRef<HTMLDivElement>(null);
  const lines = useRef<LinesHandle>(null);
  const [selection, setSelection] = useState<Selection | null>(null);
  // The last node clicked in each graph: pairing by clicking pairs these two.
  const [picked, setPicked] = useState<Record<Side, string | null>>({ golden: null, compressed: null });
  const link =
    selection === null
      ? undefined
      : (selection.side === "golden" ? links.byGolden : links.byCompressed).get(selection.node);
  const boxes = useMemo(
    () => ({ golden: boxIds(golden, expanded.golden), compressed: boxIds(compressed, expanded.compressed) }),
    [golden, compressed, expanded],
  );
  const pairs = useMemo(
    () =>
      boxPairs(
        links.links,
        (l) => ({ golden: boxes.golden.get(l.golden) ?? null, compressed: boxes.compressed.get(l.compressed) ?? null }),
        linkFill,
        (l) => l === link,
      ),
    [links, boxes, link],
  );

  /** Select a node, reveal its match in the other graph (expanding the groups around it) and centre it. */
  const pick = (side: Side, node: string) => {
    setSelection({ side, node });
    setPicked((p) => ({ ...p, [side]: node }));
    const other = OTHER[side];
    const match = (side === "golden" ? links.byGolden : links.byCompressed).get(node)?.[other];
    const target = match === undefined ? undefined : graphs[other].nodes.find((n) => n.id === match);
    if (!target) return;
    const missing = target.group_path.filter((p) => !expanded[other].has(p));
    if (missing.length) setExpanded({ ...expanded, [other]: new Set([...expanded[other], ...missing]) });
    // The expanded graph's layout exists after the next render: focus then.
    setTimeout(() => canvases[other].current?.focus(target.id), 0);
  };
  const chosen = (side: Side): string | null =>
    selection === null ? null : selection.side === side ? selection.node : (link?.[side] ?? null);
  const pane = (side: Side) => (
    <GraphPane
      side={side}
      graph={graphs[side]}
      links={links}
      expanded={expanded[side]}
      setExpanded={(next) => {
        setExpanded({ ...expanded, [side]: next });
      }}
      canvas={canvases[side]}
      selected={chosen(side)}
      origin={selection?.side === side}
      onPick={pick}
      onView={() => lines.current?.redraw()}
    />
  );
  return (
    <div className="graph-side-by-side" data-testid="graph-side-by-side">
      <p className="muted small-text" data-testid="graph-links">
        {links.links.length} linked layers; {links.unmatchedGolden.size} golden and {links.unmatchedCompressed.size}{" "}
        compressed nodes unmatched
        {links.unplaced > 0 ? `; ${links.unplaced.toString()} matched layers have no node (graph inputs)` : ""}.
      </p>
      <SelectionLine selection={selection} links={links} />
      {pairing && <PairByClicking pairing={pairing} golden={golden} compressed={compressed} picked={picked} />}
      <Key />
      <div className="graph-pair" ref={pair}>
        {pane("golden")}
        {pane("compressed")}
        <LinkLines container={pair} golden={goldenCanvas} compressed={compressedCanvas} pairs={pairs} handle={lines} />
      </div>
    </div>
  );
}

function SelectionLine({ selection, links }: { selection: Selection | null; links: GraphLinks }) {
  if (selection === null) return <p className="muted">Click a layer in either graph to find its match in the other.</p>;
  const link = (selection.side === "golden" ? links.byGolden : links.byCompressed).get(selection.node);
  const unmatched = (selection.side === "golden" ? links.unmatchedGolden : links.unmatchedCompressed).has(
    selection.node,
  );
  return (
    <p data-testid="graph-selection" aria-live="polite">
      {link ? (
        <>
          Golden <code>{link.golden}</code> ↔ compressed <code>{link.compressed}</code>{" "}
          <span className="muted">
            ({link.method ?? "?"}
            {link.confidence !== null && link.method !== "name"
              ? `, confidence ${formatPercent(link.confidence, 0)}`
              : ""}
            )
          </span>
        </>
      ) : (
        <>
          {selection.side === "golden" ? "Golden" : "Compressed"} <code>{selection.node}</code>{" "}
          {unmatched ? "is not matched to any layer of the other model." : "is not a matched layer."}
        </>
      )}
    </p>
  );
}

function Key() {
  const swatches: [string, string][] = [
    [linkFill({ golden: "", compressed: "", method: "name", confidence: 1 }), "matched by name or name map"],
    [linkFill({ golden: "", compressed: "", method: "structure", confidence: 0.9 }), "by structure, confidence ≥ 80 %"],
    [linkFill({ golden: "", compressed: "", method: "structure", confidence: 0.6 }), "50–80 %"],
    [linkFill({ golden: "", compressed: "", method: "structure", confidence: 0.3 }), "< 50 %"],
    [linkFill({ golden: "", compressed: "", method: "edited", confidence: null }), "your correction (not run yet)"],
  ];
  return (
    <ul className="graph-key" aria-label="Colour key">
      {swatches.map(([fill, text]) => (
        <li key={text}>
          <span className="swatch" style={{ background: fill }} />
          {text}
        </li>
      ))}
      <li>
        <span className="swatch unmatched" style={{ background: UNMATCHED_FILL }} />
        unmatched layer
      </li>
    </ul>
  );
}

function GraphPane({
  side,
  graph,
  links,
  expanded,
  setExpanded,
  canvas,
  selected,
  origin,
  onPick,
  onView,
}: {
  side: Side;
  graph: ModelGraph;
  links: GraphLinks;
  expanded: Set<string>;
  setExpanded: (next: Set<string>) => void;
  canvas: RefObject<CanvasHandle | null>;
  selected: string | null;
  /** Whether `selected` was clicked here (drawn as selected) or is the other graph's click's match (linked). */
  origin: boolean;
  onPick: (side: Side, node: string) => void;
  onView: () => void;
}) {
  const groups = useMemo(() => groupSizes(graph.nodes), [graph]);
  const visible = useMemo(() => visibleGraph(graph, expanded), [graph, expanded]);
  const layout = useMemo(() => layoutGraph(`${graph.model_id}:${side}`, visible), [graph.model_id, side, visible]);
  const byNode = side === "golden" ? links.byGolden : links.byCompressed;
  const marked = side === "golden" ? links.unmatchedGolden : links.unmatchedCompressed;
  const colours = useMemo(() => {
    const out = new Map<string, string>();
    for (const item of visible.items) {
      const link = item.members.map((m) => byNode.get(m.id)).find((l) => l !== undefined);
      if (link) out.set(item.id, linkFill(link));
      else if (item.members.some((m) => marked.has(m.id))) out.set(item.id, UNMATCHED_FILL);
    }
    return out;
  }, [visible, byNode, marked]);

  // The box standing for the selected node: the node, or the collapsed group holding it.
  const selectedItem = useMemo(() => {
    const node = graph.nodes.find((n) => n.id === selected);
    if (!node) return null;
    const group = collapsedGroupOf(node, groups, expanded);
    return group === null ? node.id : GROUP_PREFIX + group;
  }, [graph, selected, groups, expanded]);

  const pick = (item: VisibleItem) => {
    if (item.kind === "group") {
      setExpanded(new Set([...expanded, item.id.slice(GROUP_PREFIX.length)]));
      setTimeout(() => canvas.current?.focus(item.members[0]?.id ?? ""), 0);
    } else onPick(side, item.id);
  };

  const title = side === "golden" ? "Golden model" : "Compressed model";
  return (
    <div className="graph-pane" data-side={side}>
      <h4>
        {title} <span className="muted small-text">({graph.nodes.length} nodes)</span>{" "}
        <button type="button" onClick={() => canvas.current?.fit()}>
          Fit
        </button>{" "}
        <button
          type="button"
          onClick={() => {
            setExpanded(new Set(groups.keys()));
          }}
        >
          Expand all
        </button>
      </h4>
      <GraphCanvas
        layout={layout}
        items={visible.items}
        colours={colours}
        selected={origin ? selectedItem : null}
        linked={origin ? null : selectedItem}
        marked={marked}
        onPick={pick}
        handle={canvas}
        label={`${title} graph`}
        onView={onView}
      />
    </div>
  );
}
