// A sweep's task (issue 30): the tasks SweepJobParams takes, and each task's metrics with the direction that
// is better, read from the schema in GET /job-kinds (`objectives["x-task-metrics"]`, written by the API from
// task_specs/metrics.py and kneeboard check's direction rule; the dashboard keeps no second rule).
import { isObject, type JsonObject } from "./json";
import type { Bounds } from "./sweepBounds";
import { learnTaskDirections, type Direction } from "./sweepObjectives";

export type TaskMetrics = Record<string, Record<string, Direction>>;

const property = (schema: JsonObject, name: string): JsonObject | null => {
  const properties = isObject(schema.properties) ? schema.properties : null;
  const found = properties ? properties[name] : null;
  return isObject(found) ? found : null;
};

/** The tasks a sweep can name ("auto" first), from the schema's enum. */
export function sweepTasks(schema: JsonObject): string[] {
  const values = property(schema, "task")?.enum;
  return Array.isArray(values) ? values.filter((v): v is string => typeof v === "string") : [];
}

/** Task → {"task.<metric>": "min" | "max"}, as the API states it on `field` (a sweep's objectives, a
 * sensitivity scan's rank_by); {} when the schema has none. */
export function taskMetrics(schema: JsonObject, field = "objectives"): TaskMetrics {
  const table = property(schema, field)?.["x-task-metrics"];
  const out: TaskMetrics = {};
  if (!isObject(table)) return out;
  for (const [task, metrics] of Object.entries(table)) {
    if (!isObject(metrics)) continue;
    out[task] = Object.fromEntries(
      Object.entries(metrics).filter((e): e is [string, Direction] => e[1] === "min" || e[1] === "max"),
    );
  }
  return out;
}

/** '{"ignore_index": 255}' → the flat task_options object, else why not ("" is {}). */
export function parseTaskOptions(text: string): JsonObject | string {
  if (!text.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'Task options must be a JSON object, e.g. {"ignore_index": 255}.';
  }
  if (!isObject(value)) return 'Task options must be a JSON object, e.g. {"ignore_index": 255}.';
  const flat = Object.values(value).every(
    (v) =>
      v === null ||
      ["string", "number", "boolean"].includes(typeof v) ||
      (Array.isArray(v) && v.every((item) => ["string", "number"].includes(typeof item))),
  );
  return flat ? value : "Task options are flat: names, numbers, switches or lists of them.";
}

/** The frontier a sweep opens with: the task metric against size, and its bound when one is given. */
export function taskFrontier(
  metric: string,
  direction: Direction,
  limit: string,
): { objectives: string[]; bounds: string[] } | string {
  const objectives = [`${metric}:${direction}`, "size_bytes:min"];
  if (!limit.trim()) return { objectives, bounds: [] };
  const value = Number(limit);
  if (!Number.isFinite(value)) return `The bound on ${metric} must be a number.`;
  // the bound keeps the acceptable side: at most a drop (min), at least an agreement (max)
  return { objectives, bounds: [`${metric}${direction === "min" ? "<=" : ">="}${value.toString()}`] };
}

/** The axes a sweep launched with (`objectives`: the first on y, the second on x), where the URL names none. */
export function launchAxes<
  Q extends { x: string | null; y: string | null; xDir: Direction | null; yDir: Direction | null },
>(query: Q, params: JsonObject): Q {
  if (query.x !== null || query.y !== null || !Array.isArray(params.objectives)) return query;
  const parsed = params.objectives
    .filter((o): o is string => typeof o === "string")
    .map((o) => /^(.+):(min|max)$/.exec(o))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ name: m[1] ?? "", direction: m[2] === "max" ? ("max" as const) : ("min" as const) }));
  const [y, x] = parsed;
  if (!y) return query;
  return {
    ...query,
    y: y.name,
    yDir: query.yDir ?? y.direction,
    x: x?.name ?? null,
    xDir: x ? (query.xDir ?? x.direction) : query.xDir,
  };
}

const TASK_BOUND = /^(task\.[A-Za-z0-9_.-]+)(<=|>=)(.+)$/;

/** The task bound a sweep launched with (`task.miou_drop<=0.005`) as the page's task bound, where the URL names
 * no task metric: the page's control then shows it and can move or clear it. */
export function launchTaskBound<Q extends { taskMetric: string | null; bounds: Bounds }>(
  query: Q,
  params: JsonObject,
): Q {
  if (query.taskMetric !== null || !Array.isArray(params.bounds)) return query;
  for (const bound of params.bounds) {
    const m = typeof bound === "string" ? TASK_BOUND.exec(bound) : null;
    const limit = Number(m?.[3]);
    if (m?.[1] && Number.isFinite(limit))
      return { ...query, taskMetric: m[1], bounds: { ...query.bounds, taskLimit: limit } };
  }
  return query;
}

/** The other bounds a sweep launched with, on objectives its points measured: the frontier keeps applying them
 * beside the page's own bound controls (a task bound is the page's, see launchTaskBound). */
export function launchBounds(params: JsonObject, available: readonly string[]): string[] {
  if (!Array.isArray(params.bounds)) return [];
  return params.bounds.filter(
    (b): b is string => typeof b === "string" && !TASK_BOUND.test(b) && available.includes(b.split(/<=|>=/)[0] ?? ""),
  );
}

/** Learn the task metrics' directions from SweepJobParams' schema when it has come (see useSweepSchema). */
export function learnFrom(schema: unknown): void {
  if (isObject(schema)) learnTaskDirections(taskMetrics(schema));
}
