// The lines drawn between the two side-by-side graphs: one per pair of linked boxes on screen. Pure geometry
// over where each canvas draws its boxes now (GraphCanvas's `locate`), so it is tested without a browser.

/** A drawn box in client coordinates: its centre and half its drawn width. */
export interface ScreenBox {
  x: number;
  y: number;
  halfWidth: number;
}

/** A rectangle in client coordinates (what getBoundingClientRect gives). */
export interface ScreenRect {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

/** Two linked boxes: the golden box (a node, or the collapsed group holding it) and the compressed one. */
export interface BoxPair {
  golden: string;
  compressed: string;
  colour: string;
  selected: boolean;
}

export interface Segment {
  key: string;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  colour: string;
  selected: boolean;
}

/** Each linked node of the two graphs as the pair of boxes that show it; pairs shown by the same two boxes
 * (links inside two collapsed groups) are drawn once, selected if any of them is. */
export function boxPairs<L>(
  links: readonly L[],
  boxOf: (link: L) => { golden: string | null; compressed: string | null },
  colour: (link: L) => string,
  isSelected: (link: L) => boolean,
): BoxPair[] {
  const out = new Map<string, BoxPair>();
  for (const link of links) {
    const { golden, compressed } = boxOf(link);
    if (golden === null || compressed === null) continue;
    const key = `${golden}\u0000${compressed}`;
    const seen = out.get(key);
    if (seen) seen.selected ||= isSelected(link);
    else out.set(key, { golden, compressed, colour: colour(link), selected: isSelected(link) });
  }
  return [...out.values()];
}

function inside(p: { x: number; y: number }, r: ScreenRect): boolean {
  return p.x >= r.left && p.x <= r.right && p.y >= r.top && p.y <= r.bottom;
}

/**
 * The segments to draw, relative to `origin` (the overlay's top-left corner). A line runs from the golden
 * box's right edge to the compressed box's left edge when the golden canvas is left of the compressed one,
 * else (stacked, on a narrow screen) from the golden box's centre to the compressed box's centre, and there
 * only for the selected pair (a line per link across the upper canvas would hide it). A pair is drawn only
 * when both ends are inside their canvas (a box panned out of view has no line). The selected line comes last
 * so that it is drawn on top.
 */
export function linkSegments(
  pairs: readonly BoxPair[],
  locateGolden: (id: string) => ScreenBox | null,
  locateCompressed: (id: string) => ScreenBox | null,
  goldenRect: ScreenRect,
  compressedRect: ScreenRect,
  origin: { x: number; y: number },
): Segment[] {
  const sideBySide = goldenRect.right <= compressedRect.left;
  const out: Segment[] = [];
  for (const pair of pairs) {
    if (!sideBySide && !pair.selected) continue;
    const g = locateGolden(pair.golden);
    const c = locateCompressed(pair.compressed);
    if (!g || !c) continue;
    const from = { x: sideBySide ? Math.min(g.x + g.halfWidth, goldenRect.right) : g.x, y: g.y };
    const to = { x: sideBySide ? Math.max(c.x - c.halfWidth, compressedRect.left) : c.x, y: c.y };
    if (!inside({ x: g.x, y: g.y }, goldenRect) || !inside({ x: c.x, y: c.y }, compressedRect)) continue;
    out.push({
      key: `${pair.golden}\u0000${pair.compressed}`,
      x1: from.x - origin.x,
      y1: from.y - origin.y,
      x2: to.x - origin.x,
      y2: to.y - origin.y,
      colour: pair.colour,
      selected: pair.selected,
    });
  }
  return out.sort((a, b) => Number(a.selected) - Number(b.selected));
}
