import { describe, expect, it } from "vitest";
import { formatEta } from "./eta";

describe("formatEta", () => {
  it("says nothing without an estimate", () => {
    expect(formatEta(null)).toBe("");
    expect(formatEta(undefined)).toBe("");
    expect(formatEta(Number.NaN)).toBe("");
    expect(formatEta(-3)).toBe("");
  });

  it("rounds to what a straight line is good for", () => {
    expect(formatEta(4)).toBe("a few seconds left");
    expect(formatEta(44)).toBe("about 40 s left");
    expect(formatEta(54)).toBe("about 50 s left");
    expect(formatEta(55)).toBe("about 1 min left");
    expect(formatEta(130)).toBe("about 2 min left");
    expect(formatEta(59 * 60 + 40)).toBe("about 1 h left");
    expect(formatEta(80 * 60)).toBe("about 1 h 20 min left");
  });
});
