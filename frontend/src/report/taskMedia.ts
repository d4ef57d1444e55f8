// Pure helpers of the inspector's pictures and sound (TaskMediaViews.tsx): zoomed panels panned together, the
// difference picture's scale in words, a segmenter's class shares, and a waveform outline as an SVG path.

export const PANEL_SIDE = 240;
export const ZOOMS = [1, 2, 4, 8, 16] as const;

export interface Pan {
  x: number;
  y: number;
}

/** The displayed size of a picture of [height, width] at `zoom`: its longer side fills PANEL_SIDE at zoom 1,
 * so small outputs are enlarged (pixelated) and large ones shrunk to fit. */
export function displaySize(size: readonly number[], zoom: number): { width: number; height: number } {
  const [h, w] = [Math.max(1, size[0] ?? 1), Math.max(1, size[1] ?? 1)];
  const scale = (PANEL_SIDE / Math.max(h, w)) * zoom;
  return { width: w * scale, height: h * scale };
}

/** The panel (viewport) of a picture: its zoom-1 size, the same for every zoom. */
export function panelSize(size: readonly number[]): { width: number; height: number } {
  return displaySize(size, 1);
}

/** `pan` (the offset of the picture's top-left corner inside the panel, ≤ 0) kept so the zoomed picture
 * always covers the panel: from 0 down to panel − displayed along each axis. */
export function clampPan(pan: Pan, size: readonly number[], zoom: number): Pan {
  const shown = displaySize(size, zoom);
  const panel = panelSize(size);
  const clamp = (v: number, lowest: number) => Math.min(0, Math.max(Math.min(0, lowest), v));
  return { x: clamp(pan.x, panel.width - shown.width), y: clamp(pan.y, panel.height - shown.height) };
}

/** The pan that keeps the point under the panel's centre in place when the zoom changes from `from` to `to`. */
export function zoomPan(pan: Pan, size: readonly number[], from: number, to: number): Pan {
  const panel = panelSize(size);
  const [cx, cy] = [panel.width / 2, panel.height / 2];
  const k = to / from;
  return clampPan({ x: cx - (cx - pan.x) * k, y: cy - (cy - pan.y) * k }, size, to);
}

/** What a white pixel of the difference picture means, in the outputs' own units. */
export function differenceScale(gain: number, valueRange: readonly number[]): string {
  const span = (valueRange[1] ?? 1) - (valueRange[0] ?? 0);
  const white = span / gain;
  return `|golden − compressed| × ${gain.toString()}: black = equal, white = ${formatShort(white)} or more (the pictures span ${formatShort(span)})`;
}

function formatShort(v: number): string {
  return Number.isInteger(v) ? v.toString() : Number(v.toPrecision(3)).toString();
}

export interface ClassShare {
  label: number;
  colour: string;
  golden: number;
  compressed: number;
  truth: number | null;
}

/** Each class's share of the picture's pixels for both models (and the truth, over its labelled pixels),
 * largest golden share first. */
export function classShares(
  classes: readonly {
    label: number;
    colour: string;
    golden_pixels: number;
    compressed_pixels: number;
    truth_pixels?: number | null;
  }[],
  nPixels: number,
): ClassShare[] {
  const truthTotal = classes.reduce((n, c) => n + (c.truth_pixels ?? 0), 0);
  return classes
    .map((c) => ({
      label: c.label,
      colour: c.colour,
      golden: nPixels ? c.golden_pixels / nPixels : 0,
      compressed: nPixels ? c.compressed_pixels / nPixels : 0,
      truth: c.truth_pixels == null ? null : truthTotal ? c.truth_pixels / truthTotal : 0,
    }))
    .sort((a, b) => b.golden - a.golden || a.label - b.label);
}

/** The outline's band ([min, max] per column) as one closed SVG path over width × height, the values mapped
 * from [-peak, peak] (peak at least 1e-12) to the height, top = +peak. */
export function outlinePath(
  outline: readonly (readonly number[])[],
  width: number,
  height: number,
  peak: number,
): string {
  if (outline.length === 0) return "";
  const p = Math.max(peak, 1e-12);
  const y = (v: number) => ((1 - v / p) * height) / 2;
  const x = (i: number) => (outline.length === 1 ? width / 2 : (i * width) / (outline.length - 1));
  const top = outline.map((c, i) => `${fmt(x(i))},${fmt(y(c[1] ?? 0))}`);
  const bottom = outline.map((c, i) => `${fmt(x(i))},${fmt(y(c[0] ?? 0))}`).reverse();
  return `M${top.join("L")}L${bottom.join("L")}Z`;
}

/** The largest |value| over several outlines (null ones skipped): one scale for waveforms drawn together. */
export function outlinePeak(outlines: readonly (readonly (readonly number[])[] | null | undefined)[]): number {
  let peak = 0;
  for (const o of outlines) for (const c of o ?? []) peak = Math.max(peak, Math.abs(c[0] ?? 0), Math.abs(c[1] ?? 0));
  return peak;
}

function fmt(v: number): string {
  return Number(v.toFixed(2)).toString();
}
