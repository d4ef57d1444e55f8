// Budget rules as people type them, one per line: "kl_mean <= 0.01", "top1_match >= 0.995" (the limits of
// `kneeboard check --max kl_mean=0.01 --min top1_match=0.995`).
import type { components } from "../client/schema";

export type BudgetRule = components["schemas"]["BudgetRule"];

const LINE = /^\s*([A-Za-z0-9_.]+)\s*(<=|>=)\s*(\S+)\s*$/;

export type Parsed = { rules: BudgetRule[]; error: null } | { rules: null; error: string };

/** The rules of the text, or the first line that is not "METRIC <= NUMBER" / "METRIC >= NUMBER". */
export function parseRules(text: string): Parsed {
  const rules: BudgetRule[] = [];
  const lines = text.split("\n");
  for (const [index, raw] of lines.entries()) {
    if (raw.trim() === "") continue;
    const where = `line ${(index + 1).toString()}`;
    const match = LINE.exec(raw);
    if (!match) return { rules: null, error: `${where}: write METRIC <= NUMBER or METRIC >= NUMBER` };
    const [, metric = "", op, number = ""] = match;
    const value = Number(number);
    if (!Number.isFinite(value)) return { rules: null, error: `${where}: ${number} is not a finite number` };
    rules.push({ metric, bound: op === "<=" ? "max" : "min", value });
  }
  if (rules.length === 0) return { rules: null, error: "write at least one rule, e.g. kl_mean <= 0.01" };
  return { rules, error: null };
}

export function formatRule(rule: { metric: string; bound: "max" | "min"; value: number }): string {
  return `${rule.metric} ${rule.bound === "max" ? "<=" : ">="} ${rule.value.toString()}`;
}

export const formatRules = (rules: BudgetRule[]): string => rules.map(formatRule).join("\n");
