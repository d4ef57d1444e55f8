// An exported report answers the pages' API calls from the document embedded in it (the kb-report element,
// written by GET /api/v1/jobs/{id}/export.html): the same JSON the API served, keyed by path. The per-sample
// lists are sorted, filtered and paged here over the rows the file holds, as the API does over all of them.
import type { Sample } from "../api/types";

export interface ReportDocument {
  format: number;
  kind: "fidelity" | "sensitivity" | "sweep";
  job_id: string;
  exported_at: string;
  responses: Record<string, unknown>;
  errors: Record<string, { status: number; detail: string }>;
  /** Fidelity: per output, the first rows by sample index and how many the job has. */
  samples?: Record<string, { rows: Sample[]; total: number }>;
  /** Sensitivity: channel importance by "layer\nmethod". */
  channels?: Record<string, unknown>;
  /** Sweep: the frontier of each objective list ("size_bytes:min,kl_mean:min"), without bounds. */
  frontiers?: Record<string, unknown>;
  /** Fidelity: the samples whose inspector the file holds (the worst by KL; their inspections are in
   * `responses`, pictures as data: URLs), at most `max`, and how many pictures the byte budget left out. */
  inspections?: { indices: number[]; max: number; pictures_left_out: number };
}

export interface Answer {
  status: number;
  body: unknown;
}

const API = "/api/v1/";
const KINDS = new Set(["fidelity", "sensitivity", "sweep"]);

/** The embedded document, or an error that says what is wrong with the file. */
export function parseDocument(text: string | null | undefined): ReportDocument {
  const doc: unknown = JSON.parse(text ?? "null");
  if (typeof doc !== "object" || doc === null || !("kind" in doc) || !("responses" in doc)) {
    throw new Error("this page holds no Kneeboard report: download one from a job's page (Download report)");
  }
  const d = doc as ReportDocument;
  if (!KINDS.has(d.kind)) throw new Error(`unknown report kind ${d.kind as string}`);
  return d;
}

const notHere = (what: string): Answer => ({
  status: 404,
  body: { detail: `${what} is not in this offline report; open the job on the Kneeboard dashboard to see it.` },
});

type SortKey = "kl" | "cosine" | "mse" | "sample_index";
const SORT_KEYS = new Set<string>(["kl", "cosine", "mse", "sample_index"]);

/** The API's order: the column, or the per-sample task value `task:<name>` (nulls last in both directions),
 * then the sample index. */
export function sortSamples(rows: readonly Sample[], key: SortKey | `task:${string}`, order: "asc" | "desc"): Sample[] {
  const sign = order === "desc" ? -1 : 1;
  const value = (r: Sample): number | null =>
    key.startsWith("task:") ? (r.task_values?.[key.slice(5)] ?? null) : r[key as SortKey];
  return [...rows].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (x !== y) {
      if (x === null) return 1;
      if (y === null) return -1;
      return sign * (x < y ? -1 : 1);
    }
    return a.sample_index - b.sample_index;
  });
}

function page(rows: readonly Sample[], params: URLSearchParams): Answer {
  const limit = Math.max(1, Math.min(1000, Number(params.get("limit") ?? "50") || 50));
  const offset = Math.max(0, Number(params.get("offset") ?? "0") || 0);
  return { status: 200, body: { items: rows.slice(offset, offset + limit), total: rows.length, limit, offset } };
}

function samplesOf(doc: ReportDocument, output: string | null): Sample[] | null {
  const samples = doc.samples ?? {};
  const name = output ?? Object.keys(samples).sort()[0];
  return name === undefined ? [] : (samples[name]?.rows ?? null);
}

function listSamples(doc: ReportDocument, params: URLSearchParams): Answer {
  let rows = samplesOf(doc, params.get("output"));
  if (rows === null) return notHere(`Output ${params.get("output") ?? ""}`);
  const flagged = params.get("flagged");
  if (flagged !== null) rows = rows.filter((r) => r.flagged === (flagged === "true"));
  const flipped = params.get("flipped");
  if (flipped !== null) rows = rows.filter((r) => r.top1_match === (flipped !== "true"));
  const sort = params.get("sort") ?? "kl";
  const task = params.get("task_metric");
  const key = task ? (`task:${task}` as const) : SORT_KEYS.has(sort) ? (sort as SortKey) : "kl";
  return page(sortSamples(rows, key, params.get("order") === "asc" ? "asc" : "desc"), params);
}

/** The rows the file holds sorted by a task metric as the API does: worst first (lowest when higher is better),
 * samples without a value last, then the sample index; the metric's direction comes from the embedded proxy. */
function taskSamples(doc: ReportDocument, params: URLSearchParams): Answer {
  const proxy = doc.responses[`${API}jobs/${doc.job_id}/fidelity/task`] as
    { proxy_output: string; metrics: { metric: string; higher_is_better: boolean }[] } | undefined;
  const metric = params.get("metric") ?? "";
  const found = proxy?.metrics.find((m) => m.metric === metric);
  if (!proxy || !found) return notHere(`Task metric ${metric}`);
  const rows = samplesOf(doc, proxy.proxy_output) ?? [];
  const worst = params.get("order") !== "best";
  const sign = found.higher_is_better === worst ? 1 : -1;
  const value = (r: Sample) => r.task_values?.[metric] ?? null;
  const sorted = [...rows].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    if (x !== y) {
      if (x === null) return 1;
      if (y === null) return -1;
      return sign * (x < y ? -1 : 1);
    }
    return a.sample_index - b.sample_index;
  });
  return page(sorted, params);
}

function cellSamples(doc: ReportDocument, params: URLSearchParams): Answer {
  const golden = Number(params.get("golden_class"));
  const compressed = Number(params.get("compressed_class"));
  const rows = (samplesOf(doc, null) ?? []).filter(
    (r) => r.golden_class === golden && r.compressed_class === compressed,
  );
  return page(sortSamples(rows, "kl", "desc"), params);
}

interface StoredPoint {
  id: string;
  job_id: string;
  index: number;
  label: string;
  objectives: Record<string, number | null>;
}

/** A frontier stored with `frontier_ids` (the server's compact form) gets its points back from the embedded
 * points page, as the frontier route serves them (report_export.py `_frontier_point`). */
export function expandFrontier(doc: ReportDocument, stored: unknown): unknown {
  if (typeof stored !== "object" || stored === null || !("frontier_ids" in stored)) return stored;
  const { frontier_ids: ids, ...rest } = stored as { frontier_ids: string[]; knee?: string | null };
  const page = doc.responses[`${API}jobs/${doc.job_id}/sweep/points`] as { items?: StoredPoint[] } | undefined;
  const byId = new Map((page?.items ?? []).map((p) => [p.id, p]));
  const frontier = ids.flatMap((id) => {
    const p = byId.get(id);
    return p
      ? [
          {
            id: p.id,
            job_id: p.job_id,
            index: p.index,
            label: p.label,
            objectives: p.objectives,
            knee: id === rest.knee,
          },
        ]
      : [];
  });
  return { ...rest, frontier };
}

/** The answer to GET `url` (any origin: only the path from /api/v1/ on counts). */
export function answer(doc: ReportDocument, method: string, url: string): Answer {
  if (method !== "GET") return { status: 405, body: { detail: "An offline report cannot change anything." } };
  const parsed = new URL(url, "file:///");
  const at = parsed.pathname.indexOf(API);
  if (at < 0) return notHere(url);
  const path = decodeURIComponent(parsed.pathname.slice(at));
  const params = parsed.searchParams;
  const job = `${API}jobs/${doc.job_id}`;
  if (path === `${job}/fidelity/samples`) return listSamples(doc, params);
  if (path === `${job}/fidelity/classes/samples`) return cellSamples(doc, params);
  if (path === `${job}/fidelity/task/samples`) return taskSamples(doc, params);
  if (path === `${job}/sensitivity/channels`) {
    const found = doc.channels?.[`${params.get("layer") ?? ""}\n${params.get("method") ?? "l1"}`];
    return found === undefined ? notHere("This layer's channel importance") : { status: 200, body: found };
  }
  if (path === `${API}sweep-frontier`) {
    if (params.getAll("bound").length > 0) return notHere("A frontier with bounds");
    const found = doc.frontiers?.[params.getAll("objective").join(",")];
    return found === undefined ? notHere("This frontier") : { status: 200, body: expandFrontier(doc, found) };
  }
  if (path in doc.responses) return { status: 200, body: doc.responses[path] };
  const error = doc.errors[path];
  if (error) return { status: error.status, body: { detail: error.detail } };
  const sample = new RegExp(`^${job}/samples/(\\d+)$`).exec(path);
  if (sample && doc.inspections) return notInspectable(doc.inspections, Number(sample[1]));
  return notHere(path.slice(API.length - 1));
}

/** Why the file cannot inspect this sample, and which ones it can. */
function notInspectable(held: NonNullable<ReportDocument["inspections"]>, index: number): Answer {
  const some = held.indices.slice(0, 10).map((i) => `#${i.toString()}`);
  const which =
    held.indices.length === 0
      ? "none of its samples (the job stored no per-sample probabilities)"
      : `the ${held.indices.length.toString()} samples with the largest KL (${some.join(", ")}${held.indices.length > 10 ? ", …" : ""})`;
  return {
    status: 404,
    body: {
      detail: `Sample #${index.toString()} is not inspectable in this offline report: it holds the inspector for ${which}. Open the job on the Kneeboard dashboard to inspect the others.`,
    },
  };
}

/** How many per-sample rows the file holds of how many the job has (the primary output's). */
export function sampleCoverage(doc: ReportDocument): { held: number; total: number } | null {
  const first = Object.values(doc.samples ?? {})[0];
  return first ? { held: first.rows.length, total: first.total } : null;
}
