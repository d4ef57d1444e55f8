// The matching drawn between the two side-by-side graphs: an SVG laid over both canvases (it takes no pointer
// events) with a line per pair of linked boxes on screen, redrawn after every pan, zoom, fit or expansion of
// either canvas. The lines are written straight to the DOM, like GraphCanvas's transform, so a pan frame
// never re-renders React.
import { useCallback, useEffect, useImperativeHandle, useLayoutEffect, useRef, type Ref, type RefObject } from "react";
import type { CanvasHandle } from "./GraphCanvas";
import { linkSegments, type BoxPair } from "./linkLines";

const SVG_NS = "http://www.w3.org/2000/svg";

interface Props {
  /** The element holding both canvases (positioned), which the overlay covers. */
  container: RefObject<HTMLDivElement | null>;
  golden: RefObject<CanvasHandle | null>;
  compressed: RefObject<CanvasHandle | null>;
  pairs: readonly BoxPair[];
  /** Its redraw, for the canvases' `onView`. */
  handle: Ref<LinesHandle>;
}

export interface LinesHandle {
  redraw: () => void;
}

export function LinkLines({ container, golden, compressed, pairs, handle }: Props) {
  const group = useRef<SVGGElement>(null);
  const frame = useRef<number | null>(null);

  const draw = useCallback(() => {
    if (frame.current !== null) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = null;
      const g = group.current;
      const box = container.current?.getBoundingClientRect();
      const goldenRect = golden.current?.bounds();
      const compressedRect = compressed.current?.bounds();
      if (!g || !box || !goldenRect || !compressedRect || !golden.current || !compressed.current) return;
      const segments = linkSegments(
        pairs,
        golden.current.locate,
        compressed.current.locate,
        goldenRect,
        compressedRect,
        { x: box.left, y: box.top },
      );
      g.replaceChildren(
        ...segments.map((s) => {
          const line = document.createElementNS(SVG_NS, "line");
          line.setAttribute("x1", s.x1.toFixed(1));
          line.setAttribute("y1", s.y1.toFixed(1));
          line.setAttribute("x2", s.x2.toFixed(1));
          line.setAttribute("y2", s.y2.toFixed(1));
          line.setAttribute("stroke", s.selected ? "#1f2933" : s.colour);
          line.setAttribute("class", s.selected ? "graph-link-line selected" : "graph-link-line");
          const [goldenBox, compressedBox] = s.key.split("\u0000");
          line.setAttribute("data-golden", goldenBox ?? "");
          line.setAttribute("data-compressed", compressedBox ?? "");
          return line;
        }),
      );
    });
  }, [container, golden, compressed, pairs]);

  useImperativeHandle(handle, () => ({ redraw: draw }), [draw]);
  useEffect(() => {
    window.addEventListener("resize", draw);
    return () => {
      window.removeEventListener("resize", draw);
      if (frame.current !== null) cancelAnimationFrame(frame.current);
      frame.current = null;
    };
  }, [draw]);
  // New pairs (a selection, a correction, an expanded group): draw once the canvases have their new layout.
  useLayoutEffect(draw, [draw]);

  return (
    <svg className="graph-link-lines" data-testid="graph-link-lines" aria-hidden="true">
      <g ref={group} />
    </svg>
  );
}
