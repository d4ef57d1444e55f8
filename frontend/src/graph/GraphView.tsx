// The model page's "Graph" section: the model's layered graph coloured by a per-layer metric, with search,
// collapsible module groups and a panel for the clicked node; or, for a fidelity job of this model, the golden
// and compressed graphs side by side with the matching between them (SideBySideGraphs).
import { useMemo, useRef, useState } from "react";
import { useLayerProfile } from "../api/fidelity";
import { useSensitivityReport } from "../api/sensitivity";
import type { Job, Model } from "../api/types";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { formatCount, formatTime } from "../lib/format";
import { GROUP_PREFIX, groupSizes, initialExpanded, searchNodes, visibleGraph } from "./collapse";
import { GraphCanvas, type CanvasHandle } from "./GraphCanvas";
import { GraphLegend } from "./GraphLegend";
import "./graph.css";
import { layoutGraph } from "./layout";
import {
  colourOf,
  graphMetric,
  itemValue,
  nameIndex,
  profileNodeId,
  sensitivityMetric,
  shiftMetric,
  sqnrMetric,
  type NodeMetric,
} from "./metrics";
import { NodeAcrossJobs } from "./NodeAcrossJobs";
import { NodePanel } from "./NodePanel";
import { FidelitySideBySide } from "./SideBySideGraphs";
import { jobSide, useColourJobs, useModelGraph } from "./queries";
import type { GraphNode, ModelGraph, VisibleItem } from "./types";

export function GraphSection({ model }: { model: Model }) {
  const graph = useModelGraph(model.id, model.status === "ready");
  const [pairJobId, setPairJobId] = useState("");
  const jobs = useColourJobs(model.project_id, model.id);
  const fidelityJobs = (jobs.data ?? []).filter((j) => j.kind === "fidelity");
  const pairJob = fidelityJobs.find((j) => j.id === pairJobId);
  if (model.status !== "ready") return null;
  return (
    <section className="panel graph-section" aria-labelledby="graph-heading">
      <h2 id="graph-heading">Graph</h2>
      {fidelityJobs.length > 0 && (
        <label className="graph-mode">
          Show{" "}
          <select
            value={pairJobId}
            aria-label="Graph mode"
            onChange={(e) => {
              setPairJobId(e.target.value);
            }}
          >
            <option value="">this model alone</option>
            {fidelityJobs.map((j) => (
              <option key={j.id} value={j.id}>
                side by side with the other model of {jobLabel(j, jobSide(j, model.id) ?? "")}
              </option>
            ))}
          </select>
        </label>
      )}
      {pairJob ? (
        <FidelitySideBySide job={pairJob} />
      ) : (
        <>
          {graph.isPending && <Loading what="the graph" />}
          {graph.isError && <ErrorMessage error={graph.error} />}
          {graph.data &&
            (graph.data.nodes.length === 0 ? (
              <Empty>{graph.data.notes.join(" ") || "The model's graph has no nodes."}</Empty>
            ) : (
              <GraphView graph={graph.data} model={model} />
            ))}
        </>
      )}
    </section>
  );
}

function jobLabel(job: Job, side: string): string {
  const name = job.name || job.id.slice(0, 8);
  return `${job.kind} ${name} (${side} model, ${formatTime(job.created_at)})`;
}

function GraphView({ graph, model }: { graph: ModelGraph; model: Model }) {
  const [expanded, setExpanded] = useState<Set<string>>(() => initialExpanded(graph));
  const [selected, setSelected] = useState<VisibleItem | null>(null);
  const [choice, setChoice] = useState("params");
  const [config, setConfig] = useState<string | null>(null);
  const [query, setQuery] = useState("");
  const canvas = useRef<CanvasHandle>(null);
  const jobs = useColourJobs(model.project_id, model.id);

  const [source, jobId, which] = choice.split(":");
  const job = jobs.data?.find((j) => j.id === jobId);
  const report = useSensitivityReport(jobId ?? "", "only", source === "sens" && !!jobId);
  const profile = useLayerProfile(jobId ?? "", source === "fid" && !!jobId);
  const configId = config ?? report.data?.configs[0]?.id ?? null;

  const metric: NodeMetric | null = useMemo(() => {
    if (source === "params" || source === "macs") return graphMetric(graph.nodes, source);
    if (source === "sens" && report.data && configId) return sensitivityMetric(graph.nodes, report.data, configId);
    if (source === "fid" && profile.data && job) {
      const side = jobSide(job, model.id) === "compressed" ? "compressed" : "golden";
      if (which === "clip" || which === "dead") return shiftMetric(graph.nodes, profile.data, which, side);
      return sqnrMetric(graph.nodes, profile.data, which === "local" ? "local" : "accumulated", side);
    }
    return null;
  }, [source, which, graph, report.data, profile.data, configId, job, model.id]);

  const visible = useMemo(() => visibleGraph(graph, expanded), [graph, expanded]);
  const layout = useMemo(() => layoutGraph(model.id, visible), [model.id, visible]);
  const sums = source === "params" || source === "macs";
  const range = useMemo(() => {
    const values = metric ? [...metric.values.values()] : [];
    return values.length ? { min: Math.min(...values), max: Math.max(...values) } : null;
  }, [metric]);
  const colours = useMemo(() => {
    const out = new Map<string, string>();
    if (!metric || !range) return out;
    for (const item of visible.items) {
      const value = itemValue(item, metric, sums);
      if (value === null) continue;
      const v = Math.min(range.max, Math.max(range.min, value));
      out.set(item.id, colourOf(v, range.min, range.max, metric.higherIsWorse, sums));
    }
    return out;
  }, [metric, range, visible, sums]);

  const groups = useMemo(() => groupSizes(graph.nodes), [graph]);
  const hits = useMemo(() => searchNodes(graph, query), [graph, query]);

  const reveal = (node: GraphNode) => {
    const next = new Set(expanded);
    for (const prefix of node.group_path) next.add(prefix);
    setExpanded(next);
    setSelected({ id: node.id, kind: "node", label: node.id, opType: node.op_type, members: [node] });
    // The layout of the expanded graph exists after this render: focus then.
    setTimeout(() => canvas.current?.focus(node.id), 0);
  };

  const pick = (item: VisibleItem) => {
    if (item.kind === "group") {
      setExpanded(new Set([...expanded, item.id.slice(GROUP_PREFIX.length)]));
      setTimeout(() => canvas.current?.focus(item.members[0]?.id ?? ""), 0);
    } else setSelected(item);
  };

  const collapse = (prefix: string) => {
    const next = new Set([...expanded].filter((g) => g !== prefix && !g.startsWith(`${prefix}.`)));
    setExpanded(next);
    setSelected(null);
  };

  const selectedNode = selected?.members[0] ?? null;
  const fidelityRow = useMemo(() => {
    if (source !== "fid" || !profile.data || !job || !selectedNode) return null;
    const side = jobSide(job, model.id) === "compressed" ? "compressed" : "golden";
    const index = nameIndex(graph.nodes);
    // The last row of the node, as in the colours (a later row overwrites an earlier one there).
    const rows = [...(profile.data.layers ?? [])].reverse();
    return rows.find((l) => profileNodeId(index, l, side) === selectedNode.id) ?? null;
  }, [source, profile.data, job, selectedNode, model.id, graph]);
  return (
    <div className="graph-view">
      <div className="graph-toolbar">
        <label>
          Colour by{" "}
          <select
            value={choice}
            onChange={(e) => {
              setChoice(e.target.value);
            }}
            aria-label="Colour by"
          >
            <option value="params">Parameters</option>
            <option value="macs">MACs</option>
            {jobs.data?.map((j) => {
              const side = jobSide(j, model.id) ?? "";
              return j.kind === "sensitivity" ? (
                <option key={j.id} value={`sens:${j.id}`}>
                  {jobLabel(j, side)}: score per layer
                </option>
              ) : (
                [
                  <option key={`${j.id}-a`} value={`fid:${j.id}:accumulated`}>
                    {jobLabel(j, side)}: accumulated SQNR
                  </option>,
                  <option key={`${j.id}-l`} value={`fid:${j.id}:local`}>
                    {jobLabel(j, side)}: local SQNR
                  </option>,
                  <option key={`${j.id}-c`} value={`fid:${j.id}:clip`}>
                    {jobLabel(j, side)}: clipping rate
                  </option>,
                  <option key={`${j.id}-d`} value={`fid:${j.id}:dead`}>
                    {jobLabel(j, side)}: dead units
                  </option>,
                ]
              );
            })}
          </select>
        </label>
        {source === "sens" && report.data && (
          <label>
            Configuration{" "}
            <select
              value={configId ?? ""}
              onChange={(e) => {
                setConfig(e.target.value);
              }}
              aria-label="Configuration"
            >
              {report.data.configs.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.id}
                </option>
              ))}
            </select>
          </label>
        )}
        <label className="graph-search">
          Find{" "}
          <input
            type="search"
            value={query}
            placeholder="layer name or alias"
            aria-label="Find a layer by name or alias"
            onChange={(e) => {
              setQuery(e.target.value);
            }}
            onKeyDown={(e) => {
              if (e.key === "Enter" && hits[0]) reveal(hits[0]);
            }}
          />
        </label>
        <button
          type="button"
          onClick={() => {
            setExpanded(new Set(groups.keys()));
          }}
        >
          Expand all
        </button>
        <button
          type="button"
          onClick={() => {
            setExpanded(new Set());
          }}
        >
          Collapse all
        </button>
        <button type="button" onClick={() => canvas.current?.fit()}>
          Fit
        </button>
      </div>
      {query.trim() !== "" && (
        <ul className="graph-hits" aria-label="Matching layers">
          {hits.length === 0 && <li className="muted">No layer is named like that.</li>}
          {hits.map((node) => (
            <li key={node.id}>
              <button
                type="button"
                className="link"
                onClick={() => {
                  reveal(node);
                }}
              >
                {node.id}
              </button>{" "}
              <span className="muted">{node.op_type}</span>
            </li>
          ))}
        </ul>
      )}
      {(report.isError || profile.isError) && <ErrorMessage error={report.error ?? profile.error} />}
      {profile.data?.error && <p className="note">{profile.data.error}</p>}
      <p className="muted small-text" data-testid="graph-stats">
        {graph.nodes.length} nodes, {graph.edges.length} edges; {visible.items.length} boxes drawn
        {groups.size > 0 ? ` (${groups.size} module groups; click a group to expand it)` : ""}.
      </p>
      <div className="graph-body">
        <GraphCanvas
          layout={layout}
          items={visible.items}
          colours={colours}
          selected={selected?.id ?? null}
          onPick={pick}
          handle={canvas}
        />
        <aside className="graph-side">
          {metric && range ? (
            <GraphLegend metric={metric} min={range.min} max={range.max} log={sums} />
          ) : (
            <p className="muted">
              {source === "params" || source === "macs" ? "No values." : "Loading the job's numbers…"}
            </p>
          )}
          {selectedNode && (
            <NodePanel
              node={selectedNode}
              metric={metric}
              report={source === "sens" ? (report.data ?? null) : null}
              fidelity={fidelityRow}
              collapsible={selectedNode.group_path.filter((p) => groups.has(p) && expanded.has(p))}
              onCollapse={collapse}
            />
          )}
          {selectedNode && selectedNode.kind === "op" && (
            <NodeAcrossJobs node={selectedNode} nodes={graph.nodes} modelId={model.id} jobs={jobs.data ?? []} />
          )}
        </aside>
      </div>
      <p className="muted small-text">
        Layout {layout.ms > 0 ? `${layout.ms.toFixed(0)} ms` : "cached"}; parameters {formatCount(sumParams(graph))}.
      </p>
    </div>
  );
}

function sumParams(graph: ModelGraph): number {
  return graph.nodes.reduce((total, node) => total + node.params, 0);
}
