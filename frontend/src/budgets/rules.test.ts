import { describe, expect, it } from "vitest";
import { formatRules, parseRules } from "./rules";

describe("budget rules", () => {
  it("parses one rule a line, max for <= and min for >=", () => {
    const parsed = parseRules("kl_mean <= 0.01\n\n  top1_match>=0.995  \nlabels.top1_accuracy_drop_pp <= 1e-1");
    expect(parsed.error).toBeNull();
    expect(parsed.rules).toEqual([
      { metric: "kl_mean", bound: "max", value: 0.01 },
      { metric: "top1_match", bound: "min", value: 0.995 },
      { metric: "labels.top1_accuracy_drop_pp", bound: "max", value: 0.1 },
    ]);
  });

  it("round-trips through its text", () => {
    const text = "kl_mean <= 0.01\ntop1_match >= 0.995";
    const parsed = parseRules(text);
    expect(parsed.rules && formatRules(parsed.rules)).toBe(text);
  });

  it("names the line it cannot read", () => {
    expect(parseRules("kl_mean <= 0.01\nkl mean < 3").error).toBe("line 2: write METRIC <= NUMBER or METRIC >= NUMBER");
    expect(parseRules("kl_mean <= abc").error).toBe("line 1: abc is not a finite number");
    expect(parseRules("kl_mean <= Infinity").error).toBe("line 1: Infinity is not a finite number");
    expect(parseRules("  \n").error).toMatch(/at least one rule/);
  });
});
