// Hash routes (#/projects/ID …): the API serves index.html only at /, so the path after # carries the page
// and its state, and every page is a permalink.
import { DEFAULT_SWEEP_QUERY, formatSweepQuery, parseSweepQuery, writeSweepQuery, type SweepQuery } from "./sweepQuery";

export type { SweepQuery } from "./sweepQuery";
export { DEFAULT_SWEEP_QUERY } from "./sweepQuery";

export type SampleSort = "kl" | "cosine" | "mse" | "sample_index";
export type Tristate = "any" | "yes" | "no";

export interface SampleQuery {
  sort: SampleSort;
  /** Sort by this per-sample task value instead of `sort` (a task job's table leads with its task). */
  task_metric: string | null;
  order: "asc" | "desc";
  flagged: Tristate;
  flipped: Tristate;
  offset: number;
  limit: number;
  /** The sample highlighted in the table and the charts. */
  sample: number | null;
}

/** A sensitivity job's page: which matrix, which ranking, which layer (and how its channels are scored). */
export interface SensitivityQuery {
  view: "only" | "all_but";
  /** The ranked list: "overall" (null) or one configuration id. */
  ranking: string | null;
  /** The layer whose metadata and channel importance are shown. */
  layer: string | null;
  /** Channel-importance method (l1, l2, taylor, reconstruction); null: the first the job computed. */
  method: string | null;
}

/** The compare page: the sensitivity scans overlaid and the configuration compared; the sweeps on one frontier. */
export interface CompareQuery {
  /** Sensitivity job ids; empty: the newest few. */
  jobs: string[];
  config: string | null;
  /** Sweep job ids; empty: the newest few. */
  sweeps: string[];
  /** The sweeps' objectives, bounds and selected point ("<job id>:<index>"). */
  frontier: SweepQuery;
}

/** A team page's audit trail: one action or all, and the page of events (newest first). */
export interface AuditQuery {
  action: string | null;
  offset: number;
}

export const DEFAULT_AUDIT_QUERY: AuditQuery = { action: null, offset: 0 };

export type Route =
  | { page: "projects" }
  | { page: "account" }
  | { page: "users" }
  | { page: "team"; teamId: string; query: AuditQuery }
  | { page: "project"; projectId: string }
  | { page: "compare"; projectId: string; query?: CompareQuery }
  | { page: "model"; modelId: string }
  | { page: "report"; jobId: string; query: SampleQuery }
  | { page: "sensitivity"; jobId: string; query: SensitivityQuery }
  | { page: "sweep"; jobId: string; query: SweepQuery }
  | { page: "recovery"; jobId: string }
  | { page: "notFound"; path: string };

export const DEFAULT_SAMPLE_QUERY: SampleQuery = {
  sort: "kl",
  task_metric: null,
  order: "desc",
  flagged: "any",
  flipped: "any",
  offset: 0,
  limit: 25,
  sample: null,
};

const SORTS: readonly SampleSort[] = ["kl", "cosine", "mse", "sample_index"];
const TRISTATES: readonly Tristate[] = ["any", "yes", "no"];
export const PAGE_SIZES = [25, 50, 100] as const;

function oneOf<T extends string>(value: string | null, allowed: readonly T[], fallback: T): T {
  return allowed.find((a) => a === value) ?? fallback;
}

function nonNegativeInt(value: string | null): number | null {
  if (value === null || !/^\d+$/.test(value)) return null;
  return Number(value);
}

function parseSampleQuery(params: URLSearchParams): SampleQuery {
  const d = DEFAULT_SAMPLE_QUERY;
  const limit = nonNegativeInt(params.get("limit"));
  return {
    sort: oneOf(params.get("sort"), SORTS, d.sort),
    task_metric: /^[A-Za-z0-9_]{1,64}$/.test(params.get("task_metric") ?? "") ? params.get("task_metric") : null,
    order: oneOf(params.get("order"), ["asc", "desc"], d.order),
    flagged: oneOf(params.get("flagged"), TRISTATES, d.flagged),
    flipped: oneOf(params.get("flipped"), TRISTATES, d.flipped),
    offset: nonNegativeInt(params.get("offset")) ?? d.offset,
    limit: PAGE_SIZES.find((s) => s === limit) ?? d.limit,
    sample: nonNegativeInt(params.get("sample")),
  };
}

/** Only the values that differ from the defaults, so links stay short. */
function formatSampleQuery(query: SampleQuery): string {
  const params = new URLSearchParams();
  for (const key of Object.keys(DEFAULT_SAMPLE_QUERY) as (keyof SampleQuery)[]) {
    const value = query[key];
    if (value !== DEFAULT_SAMPLE_QUERY[key] && value !== null) params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

export const DEFAULT_SENSITIVITY_QUERY: SensitivityQuery = { view: "only", ranking: null, layer: null, method: null };
export const DEFAULT_COMPARE_QUERY: CompareQuery = {
  jobs: [],
  config: null,
  sweeps: [],
  frontier: DEFAULT_SWEEP_QUERY,
};

const nonEmpty = (value: string | null): string | null => (value ? value : null);

function parseSensitivityQuery(params: URLSearchParams): SensitivityQuery {
  return {
    view: oneOf(params.get("view"), ["only", "all_but"], "only"),
    ranking: nonEmpty(params.get("ranking")),
    layer: nonEmpty(params.get("layer")),
    method: nonEmpty(params.get("method")),
  };
}

function formatSensitivityQuery(query: SensitivityQuery): string {
  const params = new URLSearchParams();
  if (query.view !== "only") params.set("view", query.view);
  if (query.ranking) params.set("ranking", query.ranking);
  if (query.layer) params.set("layer", query.layer);
  if (query.method) params.set("method", query.method);
  const text = params.toString();
  return text ? `?${text}` : "";
}

const idList = (value: string | null): string[] => [...new Set((value ?? "").split(",").filter(Boolean))];

function parseCompareQuery(params: URLSearchParams): CompareQuery {
  return {
    jobs: idList(params.get("jobs")),
    config: nonEmpty(params.get("config")),
    sweeps: idList(params.get("sweeps")),
    frontier: parseSweepQuery(params),
  };
}

function formatCompareQuery(query: CompareQuery | undefined): string {
  const params = new URLSearchParams();
  if (query?.jobs.length) params.set("jobs", query.jobs.join(","));
  if (query?.config) params.set("config", query.config);
  if (query?.sweeps.length) params.set("sweeps", query.sweeps.join(","));
  if (query) writeSweepQuery(query.frontier, params);
  const text = params.toString().replaceAll("%2C", ",").replaceAll("%3A", ":");
  return text ? `?${text}` : "";
}

function parseAuditQuery(params: URLSearchParams): AuditQuery {
  return {
    action: nonEmpty(params.get("action")),
    offset: nonNegativeInt(params.get("offset")) ?? 0,
  };
}

function formatAuditQuery(query: AuditQuery): string {
  const params = new URLSearchParams();
  if (query.action) params.set("action", query.action);
  if (query.offset > 0) params.set("offset", query.offset.toString());
  const text = params.toString();
  return text ? `?${text}` : "";
}

export function parseHash(hash: string): Route {
  const [path = "", search = ""] = hash.replace(/^#/, "").split("?", 2);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const [first, id, sub] = parts;
  if (parts.length === 0) return { page: "projects" };
  if (first === "account" && parts.length === 1) return { page: "account" };
  if (first === "users" && parts.length === 1) return { page: "users" };
  if (first === "teams" && id && parts.length === 2)
    return { page: "team", teamId: id, query: parseAuditQuery(new URLSearchParams(search)) };
  if (first === "projects" && id && parts.length === 2) return { page: "project", projectId: id };
  if (first === "projects" && id && sub === "compare" && parts.length === 3)
    return { page: "compare", projectId: id, query: parseCompareQuery(new URLSearchParams(search)) };
  if (first === "models" && id && parts.length === 2) return { page: "model", modelId: id };
  if (first === "jobs" && id && parts.length === 2) {
    return { page: "report", jobId: id, query: parseSampleQuery(new URLSearchParams(search)) };
  }
  if (first === "jobs" && id && sub === "sensitivity" && parts.length === 3) {
    return { page: "sensitivity", jobId: id, query: parseSensitivityQuery(new URLSearchParams(search)) };
  }
  if (first === "jobs" && id && sub === "sweep" && parts.length === 3) {
    return { page: "sweep", jobId: id, query: parseSweepQuery(new URLSearchParams(search)) };
  }
  if (first === "jobs" && id && sub === "recovery" && parts.length === 3) return { page: "recovery", jobId: id };
  return { page: "notFound", path };
}

export function href(route: Route): string {
  const e = encodeURIComponent;
  switch (route.page) {
    case "projects":
      return "#/";
    case "account":
      return "#/account";
    case "users":
      return "#/users";
    case "team":
      return `#/teams/${e(route.teamId)}${formatAuditQuery(route.query)}`;
    case "project":
      return `#/projects/${e(route.projectId)}`;
    case "compare":
      return `#/projects/${e(route.projectId)}/compare${formatCompareQuery(route.query)}`;
    case "model":
      return `#/models/${e(route.modelId)}`;
    case "report":
      return `#/jobs/${e(route.jobId)}${formatSampleQuery(route.query)}`;
    case "sensitivity":
      return `#/jobs/${e(route.jobId)}/sensitivity${formatSensitivityQuery(route.query)}`;
    case "sweep":
      return `#/jobs/${e(route.jobId)}/sweep${formatSweepQuery(route.query)}`;
    case "recovery":
      return `#/jobs/${e(route.jobId)}/recovery`;
    case "notFound":
      return `#${route.path}`;
  }
}
