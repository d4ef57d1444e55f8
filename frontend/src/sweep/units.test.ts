import { describe, expect, it } from "vitest";
import { formatBytes } from "../lib/format";
import { bytesUnit } from "./units";

describe("bytesUnit", () => {
  it("is the unit formatBytes prints the largest size in", () => {
    for (const sizes of [[300, 900], [4_000, 16_000], [3 * 1024 ** 2, 5_000], [2 * 1024 ** 3]]) {
      const unit = bytesUnit(sizes);
      const printed = formatBytes(Math.max(...sizes)).split(" ")[1];
      expect(unit.name === "bytes" ? "B" : unit.name).toBe(printed);
      expect(Math.max(...sizes) / unit.bytes).toBeGreaterThanOrEqual(1);
      expect(Math.max(...sizes) / unit.bytes).toBeLessThan(1024);
    }
  });
  it("ignores missing values", () => {
    expect(bytesUnit([null, 2048, Number.NaN])).toEqual({ name: "KiB", bytes: 1024 });
    expect(bytesUnit([])).toEqual({ name: "bytes", bytes: 1 });
  });
});
