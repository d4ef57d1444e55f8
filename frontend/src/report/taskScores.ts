// Pure helpers of the task-scores panel (TaskScores.tsx): the rows of the classification scores table.
import type { OutputClasses } from "./diagnostics";

export type ClassificationTask = NonNullable<OutputClasses["task"]>;

export interface TaskScoreRow {
  /** What is scored, against what truth. */
  label: string;
  accuracy: number | null;
  precisionMacro: number | null;
  recallMacro: number | null;
  f1Macro: number | null;
  f1Weighted: number | null;
}

type Scores = NonNullable<ClassificationTask["against_golden"]>;

function row(label: string, s: Scores): TaskScoreRow {
  return {
    label,
    accuracy: s.accuracy ?? null,
    precisionMacro: s.precision_macro ?? null,
    recallMacro: s.recall_macro ?? null,
    f1Macro: s.f1_macro ?? null,
    f1Weighted: s.f1_weighted ?? null,
  };
}

/** One row per (model, truth): each model against the labels when there are labels, then the compressed
 * model against the golden model's predictions (label-free). */
export function taskScoreRows(task: ClassificationTask): TaskScoreRow[] {
  const rows: TaskScoreRow[] = [];
  if (task.against_labels) {
    rows.push(row("Golden vs labels", task.against_labels.golden));
    rows.push(row("Compressed vs labels", task.against_labels.compressed));
  }
  if (task.against_golden) rows.push(row("Compressed vs golden (label-free)", task.against_golden));
  return rows;
}
