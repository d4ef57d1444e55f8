// A sweep page's state in its URL (a permalink): the two objectives, their directions and log axes, the
// bounds, the latency batch size, the selected point and the table's sorting. Only what differs from the
// defaults is written, so links stay short:
//   #/jobs/ID/sweep?x=bops&y=top1_agreement&maxkl=0.01&mintop1=0.99&point=4&sort=kl_mean
// The compare page carries the same keys next to its own.
import { NO_BOUNDS, boundSpecs, objectiveParams, boundParams, type BoundSpec, type Bounds } from "./sweepBounds";
import { type SortOrder } from "./sweepTable";
import { defaultAxes, directionOf, latencyBatches, latencyObjective, type Direction } from "./sweepObjectives";

export interface SweepQuery {
  /** Objective on x; null: the default (size). */
  x: string | null;
  y: string | null;
  /** null: the objective's default direction. */
  xDir: Direction | null;
  yDir: Direction | null;
  /** null: the objective's default (log for KL, size …). */
  xLog: boolean | null;
  yLog: boolean | null;
  bounds: Bounds;
  /** The task metric the task bound (bounds.taskLimit) is on; null: the one the sweep launched bounded, if any. */
  taskMetric: string | null;
  /** Latency batch size of the latency bound and of the "slower than fp32" flag; null: the smallest timed. */
  batch: number | null;
  /** The selected point: its index (sweep page) or "<job id>:<index>" (compare page). */
  point: string | null;
  sort: string;
  order: SortOrder;
}

export const DEFAULT_SWEEP_QUERY: SweepQuery = {
  x: null,
  y: null,
  xDir: null,
  yDir: null,
  xLog: null,
  yLog: null,
  bounds: NO_BOUNDS,
  taskMetric: null,
  batch: null,
  point: null,
  sort: "index",
  order: "asc",
};

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
const BOUND_KEYS: [keyof Bounds, string][] = [
  ["maxKl", "maxkl"],
  ["minTop1", "mintop1"],
  ["maxSize", "maxsize"],
  ["maxLatency", "maxlat"],
  ["maxMemory", "maxmem"],
  ["taskLimit", "tasklimit"],
];

const name = (v: string | null): string | null => (v !== null && NAME.test(v) ? v : null);
const taskName = (v: string | null): string | null => (v?.startsWith("task.") ? name(v) : null);
const direction = (v: string | null): Direction | null => (v === "min" || v === "max" ? v : null);
const flag = (v: string | null): boolean | null => (v === "1" ? true : v === "0" ? false : null);

function finiteNumber(v: string | null): number | null {
  if (v === null || v.trim() === "") return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

function positiveInt(v: string | null): number | null {
  return v !== null && /^[1-9]\d{0,5}$/.test(v) ? Number(v) : null;
}

export function parseSweepQuery(params: URLSearchParams): SweepQuery {
  const bounds = { ...DEFAULT_SWEEP_QUERY.bounds };
  for (const [key, param] of BOUND_KEYS) bounds[key] = finiteNumber(params.get(param));
  const point = params.get("point");
  return {
    x: name(params.get("x")),
    y: name(params.get("y")),
    xDir: direction(params.get("xdir")),
    yDir: direction(params.get("ydir")),
    xLog: flag(params.get("xlog")),
    yLog: flag(params.get("ylog")),
    bounds,
    taskMetric: taskName(params.get("taskmetric")),
    batch: positiveInt(params.get("batch")),
    point: point && /^([A-Za-z0-9-]{1,64}:)?\d{1,6}$/.test(point) ? point : null,
    sort: name(params.get("sort")) ?? DEFAULT_SWEEP_QUERY.sort,
    order: params.get("order") === "desc" ? "desc" : "asc",
  };
}

/** Writes the non-default values of `query` into `params`. */
export function writeSweepQuery(query: SweepQuery, params: URLSearchParams): void {
  if (query.x) params.set("x", query.x);
  if (query.y) params.set("y", query.y);
  if (query.xDir) params.set("xdir", query.xDir);
  if (query.yDir) params.set("ydir", query.yDir);
  if (query.xLog !== null) params.set("xlog", query.xLog ? "1" : "0");
  if (query.yLog !== null) params.set("ylog", query.yLog ? "1" : "0");
  for (const [key, param] of BOUND_KEYS) {
    const v = query.bounds[key];
    if (v !== null && Number.isFinite(v)) params.set(param, String(v));
  }
  if (query.taskMetric !== null) params.set("taskmetric", query.taskMetric);
  if (query.batch !== null) params.set("batch", query.batch.toString());
  if (query.point !== null) params.set("point", query.point);
  if (query.sort !== DEFAULT_SWEEP_QUERY.sort) params.set("sort", query.sort);
  if (query.order !== DEFAULT_SWEEP_QUERY.order) params.set("order", query.order);
}

/** "?x=…&maxkl=…" or "". */
export function formatSweepQuery(query: SweepQuery): string {
  const params = new URLSearchParams();
  writeSweepQuery(query, params);
  const text = params.toString().replaceAll("%3A", ":");
  return text ? `?${text}` : "";
}

/** What the page draws, from its URL state and the objectives the points have. */
export interface SweepView {
  x: string;
  y: string;
  xDir: Direction;
  yDir: Direction;
  /** The batch sizes timed, and the one the latency bound and the "slower than fp32" flag use. */
  batches: number[];
  batch: number | null;
  /** The bounds whose objective the points have (the others are ignored). */
  bounds: Bounds;
  /** The task metric the task limit bounds (one the points have), or null. */
  taskMetric: string | null;
  specs: BoundSpec[];
  /** For GET /sweep-frontier. */
  objectiveParams: string[];
  boundParams: string[];
}

/**
 * The axes (the URL's, else size × KL or what exists; never the same objective twice when there are two), their
 * directions (the URL's, else the objective's own), the latency batch size and the bounds that apply.
 */
export function resolveView(query: SweepQuery, available: readonly string[]): SweepView {
  const defaults = defaultAxes(available);
  const x = query.x && available.includes(query.x) ? query.x : defaults.x;
  const otherY = available.find((n) => n !== x) ?? x;
  const y = query.y && available.includes(query.y) && query.y !== x ? query.y : defaults.y !== x ? defaults.y : otherY;
  const xDir = query.xDir ?? directionOf(x);
  const yDir = query.yDir ?? directionOf(y);
  const batches = latencyBatches(available);
  const batch = query.batch !== null && batches.includes(query.batch) ? query.batch : (batches[0] ?? null);
  const has = (name: string) => available.includes(name);
  const b = query.bounds;
  const bounds: Bounds = {
    maxKl: has("kl_mean") ? b.maxKl : null,
    minTop1: has("top1_agreement") ? b.minTop1 : null,
    maxSize: has("size_bytes") ? b.maxSize : null,
    maxLatency: batch !== null && has(latencyObjective(batch)) ? b.maxLatency : null,
    maxMemory: has("runtime_memory_mib") ? b.maxMemory : null,
    taskLimit: null,
  };
  const taskMetric = query.taskMetric !== null && has(query.taskMetric) ? query.taskMetric : null;
  if (taskMetric !== null) bounds.taskLimit = b.taskLimit;
  const task = taskMetric === null ? null : { metric: taskMetric, direction: directionOf(taskMetric) };
  const specs = boundSpecs(bounds, batch, task);
  const axes =
    x === y
      ? [{ name: x, direction: xDir }]
      : [
          { name: x, direction: xDir },
          { name: y, direction: yDir },
        ];
  return {
    x,
    y,
    xDir,
    yDir,
    batches,
    batch,
    bounds,
    taskMetric,
    specs,
    objectiveParams: x ? objectiveParams(axes) : [],
    boundParams: boundParams(specs),
  };
}
