import { describe, expect, it } from "vitest";
import { formatBytes, formatCount, formatDuration, formatNumber, formatPercent, formatShape, parseDay } from "./format";

describe("formatters", () => {
  it("formats numbers with 4 significant digits, tiny ones in scientific notation", () => {
    expect(formatNumber(0.00010547336)).toBe("1.055e-4");
    expect(formatNumber(42.291511)).toBe("42.29");
    expect(formatNumber(360)).toBe("360");
    expect(formatNumber(0)).toBe("0");
    expect(formatNumber(0.0005)).toBe("5e-4");
    expect(formatNumber(1.5e-7)).toBe("1.5e-7");
    expect(formatNumber(2.5e9)).toBe("2.5e+9");
    expect(formatNumber(null)).toBe("—");
    expect(formatNumber(Number.POSITIVE_INFINITY)).toBe("—");
  });

  it("formats fractions, counts, sizes and durations", () => {
    expect(formatPercent(0.9694444)).toBe("96.94 %");
    expect(formatCount(25600)).toBe("25.6 k");
    expect(formatCount(3818)).toBe("3.82 k");
    expect(formatCount(12)).toBe("12");
    expect(formatBytes(22802)).toBe("22.3 KiB");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatDuration(0.0876)).toBe("0.1 s");
    expect(formatDuration(125)).toBe("2 min 5 s");
  });

  it("formats symbolic shapes", () => {
    expect(formatShape(["batch", 1, 8, 8])).toBe("batch × 1 × 8 × 8");
    expect(formatShape([])).toBe("scalar");
  });
});

describe("parseDay", () => {
  it("reads days as the dashboard writes them, and only real days", () => {
    expect(parseDay(" 2026-12-07 ")).toBe("2026-12-07");
    expect(parseDay("2026-1-5")).toBe("2026-01-05");
    expect(parseDay("")).toBe("");
    expect(parseDay("2028-02-29")).toBe("2028-02-29");
    for (const bad of ["2026-02-29", "2026-13-01", "12/07/2026", "07.12.2026", "2026-12", "tomorrow"]) {
      expect(parseDay(bad)).toBeNull();
    }
  });
});
