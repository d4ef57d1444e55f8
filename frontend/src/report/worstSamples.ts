// Pure helpers of the worst-samples tables (WorstSamplesTable.tsx) and of the corrupted-input preview of a
// robustness point (CorruptedSample.tsx): which point the select shows, and the pictures' URLs.
import type { FidelityRobustness, RobustnessPoint } from "./robustness";

export type WorstSample = RobustnessPoint["worst_samples"][number];

/** A point of the document as the select's value: "slice:severity". */
export const pointKey = (slice: string, severity: number): string => `${slice}:${severity.toString()}`;

/** The point the select starts on: the first slice's most severe point ("" without slices). */
export function defaultPointKey(doc: FidelityRobustness): string {
  const s = doc.slices[0];
  const last = s?.points[s.points.length - 1];
  return s && last ? pointKey(s.name, last.severity) : "";
}

/** The slice and point a key names (null for a key of no point of the document). */
export function pointOf(doc: FidelityRobustness, key: string): { slice: string; point: RobustnessPoint } | null {
  const cut = key.lastIndexOf(":");
  if (cut < 0) return null;
  const slice = key.slice(0, cut);
  const severity = key.slice(cut + 1);
  const point = doc.slices.find((s) => s.name === slice)?.points.find((p) => p.severity.toString() === severity);
  return point ? { slice, point } : null;
}

/** The worst sample picked in a point, if it is still one of its worst samples (a changed point drops it). */
export function pickedIn(point: RobustnessPoint | undefined, index: number | null): WorstSample | null {
  if (!point || index === null) return null;
  return point.worst_samples.find((w) => w.sample_index === index) ?? null;
}

/** The corrupted input's picture (GET /jobs/{id}/robustness/{slice}/{severity}/samples/{index}.png). */
export function corruptedPictureUrl(jobId: string, slice: string, severity: number, index: number): string {
  const parts = [jobId, "robustness", slice, severity.toString(), "samples"].map(encodeURIComponent);
  return `/api/v1/jobs/${parts.join("/")}/${index.toString()}.png`;
}

/** The clean input's picture, as the sample inspector draws it. */
export function cleanPictureUrl(jobId: string, index: number): string {
  return `/api/v1/jobs/${encodeURIComponent(jobId)}/samples/${index.toString()}/input.png`;
}

/** "golden 3, compressed 5" (— for a class that is unknown); says when the two disagree. */
export function predictionText(golden: number | null, compressed: number | null): string {
  const text = `golden ${golden?.toString() ?? "—"}, compressed ${compressed?.toString() ?? "—"}`;
  return golden !== null && compressed !== null && golden !== compressed ? `${text} (they disagree)` : text;
}
