// Which columns the per-sample table shows: a task job's rows carry per-sample task values (WER, IoU, AP@.5…),
// which lead the table; the divergence and class columns a task's outputs leave empty (a detector's boxes have
// no KL, no class) are dropped instead of showing a column of "—".
import type { Sample } from "../api/types";

/** The task values the page's rows carry, in the order first seen, changes (`_delta`, `_drop`) first: the
 * per-sample change of the task metric against ground truth is what a team ranks by. */
export function taskColumns(rows: readonly Sample[]): string[] {
  const seen: string[] = [];
  for (const row of rows) for (const key of Object.keys(row.task_values ?? {})) if (!seen.includes(key)) seen.push(key);
  const change = (k: string) => k.endsWith("_delta") || k.endsWith("_drop");
  return [...seen.filter(change), ...seen.filter((k) => !change(k))];
}

export type OptionalColumn = "kl" | "golden_class" | "compressed_class" | "label";
const OPTIONAL: readonly OptionalColumn[] = ["kl", "golden_class", "compressed_class", "label"];

/** The optional columns to leave out: only on a task job's table, those null in every row of the page. */
export function hiddenColumns(rows: readonly Sample[]): Set<OptionalColumn> {
  if (taskColumns(rows).length === 0 || rows.length === 0) return new Set();
  return new Set(OPTIONAL.filter((c) => rows.every((r) => r[c] == null)));
}
