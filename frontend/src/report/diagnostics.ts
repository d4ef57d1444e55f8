// Pure helpers of the "why it diverges" panels (ClassDamage, SequenceFidelity): the confusion heatmap's
// matrix over the most damaged classes, the per-class bars, and the sequence metric rows.
import type { operations } from "../client/schema";

type Served<K extends keyof operations> = operations[K] extends {
  responses: { 200: { content: { "application/json": infer T } } };
}
  ? T
  : never;
export type FidelityClasses = Served<"getFidelityClasses">;
export type OutputClasses = FidelityClasses["outputs"][string];
export type ClassDamage = OutputClasses["classes"][number];
export type FidelitySequence = Served<"getFidelitySequence">;
export type OutputSequence = FidelitySequence["outputs"][string];

/** Classes shown at most in the heatmap: beyond ~30 rows the cell numbers cannot be read. */
export const HEATMAP_CLASSES = 30;

export interface ConfusionView {
  /** Class indexes of the rows and columns (the same list, in this order). */
  classes: number[];
  /** counts[row][col]: samples the golden model put in classes[row] and the compressed one in classes[col]. */
  counts: number[][];
  /** Samples whose golden or compressed class is outside `classes` (left out of the view). */
  hidden: number;
  total: number;
}

/**
 * The confusion matrix restricted to at most `limit` classes: the most damaged first (the server's order),
 * then sorted by index so the diagonal reads naturally. Cells are [golden, compressed, count].
 */
export function confusionView(
  cells: readonly (readonly number[])[],
  damageOrder: readonly number[],
  limit = HEATMAP_CLASSES,
): ConfusionView {
  const seen = new Set<number>();
  const triples = cells.map(([g = -1, c = -1, n = 0]) => [g, c, n] as const);
  for (const [g, c] of triples) {
    seen.add(g);
    seen.add(c);
  }
  const ordered = [...damageOrder.filter((k) => seen.has(k)), ...[...seen].filter((k) => !damageOrder.includes(k))];
  const classes = ordered.slice(0, limit).sort((a, b) => a - b);
  const position = new Map(classes.map((k, i) => [k, i]));
  const counts = classes.map(() => classes.map(() => 0));
  let hidden = 0;
  let total = 0;
  for (const [g, c, n] of triples) {
    total += n;
    const row = position.get(g);
    const col = position.get(c);
    const line = row === undefined ? undefined : counts[row];
    if (line === undefined || col === undefined) hidden += n;
    else line[col] = (line[col] ?? 0) + n;
  }
  return { classes, counts, hidden, total };
}

/** Share of each row's samples per cell (0 for an empty row): the heatmap's colour, so rare classes show. */
export function rowShares(counts: readonly (readonly number[])[]): number[][] {
  return counts.map((row) => {
    const sum = row.reduce((a, b) => a + b, 0);
    return row.map((n) => (sum > 0 ? n / sum : 0));
  });
}

/** The value a diagonal (agreement) cell takes in `confusionColours`: the grey end of `CONFUSION_COLOURS`. */
export const AGREEMENT = -1;

/**
 * Colours of the confusion heatmap, where the eye should go to the errors: the diagonal (both models agree)
 * at `AGREEMENT` (light grey), each off-diagonal cell at its share of the row divided by the largest such
 * share, so the worst flip is the darkest red and a cell with no flip is white.
 */
export function confusionColours(counts: readonly (readonly number[])[]): number[][] {
  const shares = rowShares(counts);
  const worst = Math.max(0, ...shares.flatMap((row, i) => row.filter((_, j) => j !== i)));
  return shares.map((row, i) => row.map((share, j) => (i === j ? AGREEMENT : worst > 0 ? share / worst : 0)));
}

/** Grey for agreement (z = -1), then white (no flip, z = 0) to dark red (the worst flip, z = 1). */
export const CONFUSION_COLOURS: [number, string][] = [
  [0, "#e6e6e6"],
  [0.499, "#e6e6e6"],
  [0.5, "#ffffff"],
  [0.75, "#f4a582"],
  [1, "#b2182b"],
];

export interface DamageBar {
  label: string;
  value: number;
}

/**
 * Bars of the per-class damage, in the server's order (most damaged first), at most `limit`: the accuracy drop
 * in percentage points when the dataset has labels, else the disagreement (1 − top-1 agreement) in percent.
 */
export function damageBars(output: OutputClasses, limit = HEATMAP_CLASSES): { measure: string; bars: DamageBar[] } {
  const labelled = output.by === "label";
  const bars = output.classes.slice(0, limit).map((row) => ({
    label: `class ${row.class_index.toString()}`,
    value: labelled ? (row.accuracy_drop_pp ?? 0) : 100 * (1 - (row.top1_agreement ?? 1)),
  }));
  return { measure: labelled ? "accuracy drop (pp)" : "disagreement with golden (%)", bars };
}

/** True when no class lost anything: the bars would draw an empty axis, so the report says it in words. */
export function noDamage(bars: readonly DamageBar[]): boolean {
  return bars.every((b) => b.value <= 0);
}

/** Rows of the sequence table: metric, mean, min, and the 5th / 50th / 95th percentiles. */
export function sequenceRows(out: OutputSequence): { metric: string; values: (number | null)[] }[] {
  const row = (metric: string, s: OutputSequence["token_cosine"]) => ({
    metric,
    values: [s.mean, s.min, s.percentiles.p5, s.percentiles.p50, s.percentiles.p95],
  });
  return [row("token cosine", out.token_cosine), row("token SQNR (dB)", out.token_sqnr_db)];
}
