// Pure helpers of the worst-samples tables (WorstSamplesTable.tsx) and of the preview of a picked worst sample
// (CorruptedSample.tsx for a robustness point, OodSample.tsx for the out-of-distribution dataset): which point
// the select shows, which sample is picked, and the pictures' URLs.
import { thumbnailHref } from "../api/datasets";
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

/** The worst sample of `rows` picked by index, if it is still one of them. */
export function pickedAmong(rows: readonly WorstSample[], index: number | null): WorstSample | null {
  if (index === null) return null;
  return rows.find((w) => w.sample_index === index) ?? null;
}

/** The worst sample picked in a point, if it is still one of its worst samples (a changed point drops it). */
export function pickedIn(point: RobustnessPoint | undefined, index: number | null): WorstSample | null {
  return point ? pickedAmong(point.worst_samples, index) : null;
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

/** "Label 4. " ("" for a dataset without labels). */
export const labelSentence = (label: number | null): string => (label === null ? "" : `Label ${label.toString()}. `);

/** An out-of-distribution worst sample's picture: the row of that dataset as stored (it is not corrupted), as
 * the dataset preview draws it (GET /datasets/{id}/samples/{index}/thumbnail.png). */
export const oodPictureUrl = (datasetId: string, index: number): string => thumbnailHref(datasetId, index);

/** What the dataset preview (listDatasetSamples) says of one row: whether it can be drawn, or why not. */
export interface RowPreview {
  image: boolean;
  error?: string | null;
}

export type OodPicture = { kind: "picture"; src: string } | { kind: "none"; why: string; loading: boolean };

/** What the preview of a picked out-of-distribution row shows: its picture, or why there is none.
 * `row`: the dataset preview of that row, undefined while it loads, null when the dataset has no such row;
 * `failed`: why the preview request failed. An exported report holds no dataset thumbnails (its API answers
 * only the job's own routes, backend/api/routes/report_export.py OFFLINE_ROUTES), so offline says so. */
export function oodPicture(
  datasetId: string,
  index: number,
  offline: boolean,
  row: RowPreview | null | undefined,
  failed: string | null,
): OodPicture {
  const none = (why: string, loading = false): OodPicture => ({ kind: "none", why, loading });
  if (offline) {
    return none(
      "The out-of-distribution samples' pictures are not embedded in an exported report: open the report in Kneeboard to see them.",
    );
  }
  if (failed !== null) return none(`No picture: the sample could not be read (${failed}).`);
  if (row === undefined) return none("Loading the picture…", true);
  if (row === null) return none(`No picture: the dataset has no row ${index.toString()} any more.`);
  if (row.error) return none(`No picture: ${row.error}`);
  if (!row.image) return none("No picture: the samples of this dataset are not images (e.g. feature vectors).");
  return { kind: "picture", src: oodPictureUrl(datasetId, index) };
}
