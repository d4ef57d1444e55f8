// A panel opened by a click (the sample inspector, a confusion cell's samples, a sweep point, a graph node)
// scrolls itself into view: it often opens far below the click (the inspector 1642 px down a 900 px viewport).
import { useEffect, useRef, type RefObject } from "react";

/** Whether a box (top and bottom, from the viewport's top) is not wholly inside a viewport this tall. */
export function needsReveal(box: { top: number; bottom: number }, viewportHeight: number): boolean {
  return box.top < 0 || box.bottom > viewportHeight;
}

/**
 * A ref for the panel: each time `opened` changes to a value other than null, the panel is scrolled to the
 * nearest edge of the viewport that shows it, unless it is already wholly in view.
 */
export function useRevealOnOpen<T extends HTMLElement>(opened: unknown): RefObject<T | null> {
  const ref = useRef<T | null>(null);
  useEffect(() => {
    const el = ref.current;
    if (opened === null || opened === undefined || !el || typeof el.scrollIntoView !== "function") return;
    if (needsReveal(el.getBoundingClientRect(), window.innerHeight)) {
      el.scrollIntoView({ behavior: "smooth", block: "nearest" });
    }
  }, [opened]);
  return ref;
}
