// Pure helpers of the generated-text view (GeneratedText.tsx).

/** The two texts split where they first differ (by character): the shared start and each one's rest. */
export function splitAtDivergence(
  golden: string,
  compressed: string,
): { same: string; golden: string; compressed: string } {
  let i = 0;
  while (i < golden.length && i < compressed.length && golden[i] === compressed[i]) i++;
  return { same: golden.slice(0, i), golden: golden.slice(i), compressed: compressed.slice(i) };
}

export interface RepetitionRow {
  metric: string;
  golden: number | null;
  compressed: number | null;
  delta: number | null;
}

type Repetition = Partial<
  Record<
    "distinct_1" | "distinct_2" | "repeated_3gram_rate" | "repeated_4gram_rate" | "longest_repeated_span",
    number | null
  >
>;

const REPETITION: [keyof Repetition, string][] = [
  ["distinct_1", "Distinct tokens (distinct-1)"],
  ["distinct_2", "Distinct bigrams (distinct-2)"],
  ["repeated_3gram_rate", "Repeated 3-grams"],
  ["repeated_4gram_rate", "Repeated 4-grams"],
  ["longest_repeated_span", "Longest repeated span (tokens)"],
];

/** One row per repetition measure: both models and the change (compressed − golden). */
export function repetitionRows(sides: {
  golden: Repetition;
  compressed: Repetition;
  delta: Repetition;
}): RepetitionRow[] {
  return REPETITION.map(([key, metric]) => ({
    metric,
    golden: sides.golden[key] ?? null,
    compressed: sides.compressed[key] ?? null,
    delta: sides.delta[key] ?? null,
  }));
}
