// The laid-out graph as SVG with pan (drag) and zoom (wheel, around the pointer). The transform lives in a ref
// and is written straight to one <g>, so panning never re-renders the hundreds of boxes under it.
import { memo, useCallback, useEffect, useImperativeHandle, useRef, type Ref } from "react";
import type { Layout } from "./layout";
import { isDark } from "./metrics";
import type { VisibleItem } from "./types";

export interface CanvasHandle {
  /** Centre the view on a box (keeping the zoom, or at 1 when zoomed far out). */
  focus: (id: string) => void;
  fit: () => void;
  /** Where a box is drawn now, in client (viewport) coordinates: its centre and half its drawn width; null
   * when the layout has no such box. */
  locate: (id: string) => { x: number; y: number; halfWidth: number } | null;
  /** The canvas's own rectangle in client coordinates. */
  bounds: () => DOMRect | null;
}

interface Props {
  layout: Layout;
  items: VisibleItem[];
  colours: Map<string, string>;
  selected: string | null;
  onPick: (item: VisibleItem) => void;
  handle: Ref<CanvasHandle>;
  /** Nodes drawn as unmatched (side-by-side mode): a dashed red outline, on their group too. */
  marked?: ReadonlySet<string>;
  /** The box linked to the selection in the other graph (side-by-side mode). */
  linked?: string | null;
  /** Accessible name of the canvas (two canvases on one page need different ones). */
  label?: string;
  /** Called after each pan, zoom or fit has been drawn (side-by-side mode redraws its link lines). */
  onView?: () => void;
}

const NO_MARKS: ReadonlySet<string> = new Set();

interface View {
  x: number;
  y: number;
  k: number;
}

const HEIGHT = 560;
const NO_VALUE_FILL = "#eef1f5";

export function GraphCanvas({
  layout,
  items,
  colours,
  selected,
  onPick,
  handle,
  marked = NO_MARKS,
  linked = null,
  label = "Model graph",
  onView,
}: Props) {
  const svg = useRef<SVGSVGElement>(null);
  const stage = useRef<SVGGElement>(null);
  const view = useRef<View>({ x: 0, y: 0, k: 1 });
  const frame = useRef<number | null>(null);
  const drag = useRef<{ x: number; y: number; moved: boolean } | null>(null);
  const viewChanged = useRef(onView);
  useEffect(() => {
    viewChanged.current = onView;
  }, [onView]);

  const apply = useCallback(() => {
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      const { x, y, k } = view.current;
      stage.current?.setAttribute("transform", `translate(${x},${y}) scale(${k})`);
      viewChanged.current?.();
    });
  }, []);

  const fit = useCallback(() => {
    const width = svg.current?.clientWidth ?? 800;
    const k = Math.min(1, width / Math.max(layout.width, 1), HEIGHT / Math.max(layout.height, 1));
    view.current = { k, x: (width - layout.width * k) / 2, y: Math.max(0, (HEIGHT - layout.height * k) / 2) };
    apply();
  }, [apply, layout]);

  useImperativeHandle(
    handle,
    () => ({
      fit,
      focus: (id: string) => {
        const box = layout.boxes.get(id);
        if (!box) return;
        const width = svg.current?.clientWidth ?? 800;
        const k = Math.max(view.current.k, 0.8);
        view.current = { k, x: width / 2 - box.x * k, y: HEIGHT / 2 - box.y * k };
        apply();
      },
      locate: (id: string) => {
        const box = layout.boxes.get(id);
        const rect = svg.current?.getBoundingClientRect();
        if (!box || !rect) return null;
        const { x, y, k } = view.current;
        return { x: rect.left + x + box.x * k, y: rect.top + y + box.y * k, halfWidth: (box.width * k) / 2 };
      },
      bounds: () => svg.current?.getBoundingClientRect() ?? null,
    }),
    [apply, fit, layout],
  );

  useEffect(fit, [fit]);

  useEffect(() => {
    const element = svg.current;
    if (!element) return;
    const onWheel = (event: WheelEvent) => {
      event.preventDefault();
      const rect = element.getBoundingClientRect();
      const px = event.clientX - rect.left;
      const py = event.clientY - rect.top;
      const { x, y, k } = view.current;
      const next = Math.min(4, Math.max(0.05, k * Math.exp(-event.deltaY * 0.0015)));
      view.current = { k: next, x: px - ((px - x) * next) / k, y: py - ((py - y) * next) / k };
      apply();
    };
    element.addEventListener("wheel", onWheel, { passive: false });
    return () => {
      element.removeEventListener("wheel", onWheel);
    };
  }, [apply]);

  return (
    <svg
      ref={svg}
      className="graph-canvas"
      data-testid="graph-canvas"
      height={HEIGHT}
      role="img"
      aria-label={`${label}: drag to pan, wheel to zoom, click a box`}
      onPointerDown={(e) => {
        drag.current = { x: e.clientX, y: e.clientY, moved: false };
      }}
      onPointerMove={(e) => {
        const d = drag.current;
        if (!d || e.buttons === 0) return;
        const dx = e.clientX - d.x;
        const dy = e.clientY - d.y;
        if (!d.moved && Math.abs(dx) + Math.abs(dy) < 3) return;
        d.moved = true;
        view.current = { ...view.current, x: view.current.x + dx, y: view.current.y + dy };
        drag.current = { x: e.clientX, y: e.clientY, moved: true };
        apply();
      }}
      onPointerUp={() => {
        setTimeout(() => (drag.current = null), 0);
      }}
    >
      <defs>
        <marker id="graph-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">
          <path d="M0,0 L10,5 L0,10 z" fill="#8a94a3" />
        </marker>
      </defs>
      <g ref={stage}>
        <Boxes
          layout={layout}
          items={items}
          colours={colours}
          selected={selected}
          marked={marked}
          linked={linked}
          onPick={(item) => {
            if (!drag.current?.moved) onPick(item);
          }}
        />
      </g>
    </svg>
  );
}

const Boxes = memo(function Boxes({
  layout,
  items,
  colours,
  selected,
  onPick,
  marked = NO_MARKS,
  linked = null,
}: Omit<Props, "handle" | "label">) {
  return (
    <>
      {layout.edges.map((edge) => (
        <polyline
          key={`${edge.source}->${edge.target}`}
          className="graph-edge"
          points={edge.points.map((p) => `${p.x},${p.y}`).join(" ")}
          markerEnd="url(#graph-arrow)"
        />
      ))}
      {items.map((item) => {
        const box = layout.boxes.get(item.id);
        if (!box) return null;
        const quantized = item.members.some((m) => m.quantized);
        const fill = colours.get(item.id) ?? NO_VALUE_FILL;
        const classes = [
          "graph-box",
          item.kind === "group" ? "graph-group" : "",
          selected === item.id ? "selected" : "",
          linked === item.id ? "linked" : "",
          marked.size > 0 && item.members.some((m) => marked.has(m.id)) ? "unmatched" : "",
          isDark(fill) ? "dark" : "",
        ];
        return (
          <g
            key={item.id}
            className={classes.join(" ")}
            transform={`translate(${box.x - box.width / 2},${box.y - box.height / 2})`}
            data-node={item.id}
            onClick={() => {
              onPick(item);
            }}
          >
            <title>{item.kind === "group" ? `${item.label}: click to expand` : item.label}</title>
            <rect width={box.width} height={box.height} rx={item.kind === "group" ? 2 : 6} fill={fill} />
            <text x={8} y={15} className="graph-label">
              {truncate(item.label, Math.floor((box.width - 16) / 7))}
            </text>
            <text x={8} y={30} className="graph-op">
              {item.kind === "group" ? `▸ ${item.opType}` : item.opType}
              {quantized ? " · quantized" : ""}
            </text>
          </g>
        );
      })}
    </>
  );
});

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `…${text.slice(text.length - max + 1)}`;
}
