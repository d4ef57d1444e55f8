import { describe, expect, it } from "vitest";
import { memoryFacts } from "./pointMemory";
import { sweepPointDoc } from "./resultFixtures";
import { point } from "./sweepFixtures";
import { toRow } from "./sweep";

const memory = {
  method: "VmHWM of a child process",
  file: "w8.onnx",
  batch_size: 1,
  runs: 3,
  threads: 1,
  peak_rss_mib: 96.4,
  baseline_rss_mib: 64.6,
  session_mib: 31.8,
  after_load_rss_mib: 90.1,
  peak_reset: true,
  load_ms: 40,
  run_ms: 12,
  wall_s: 0.55,
};

describe("memory facts", () => {
  it("show the session, the peak and the baseline in MiB, and the ratio to fp32 for a compressed point", () => {
    const row = toRow({
      ...point(1, "w8", { runtime_memory_mib: 31.8, runtime_memory_ratio: 0.57 }),
      point: sweepPointDoc({ memory }),
    });
    const facts = Object.fromEntries(memoryFacts(row, false));
    expect(facts["Session (peak − baseline)"]).toBe("31.8 MiB (0.57 × fp32)");
    expect(facts["Peak RSS of the process"]).toContain("MiB");
    expect(facts["Batch size, runs"]).toBe("1, 3");
    expect(Object.fromEntries(memoryFacts(row, true))["Session (peak − baseline)"]).not.toContain("× fp32");
  });

  it("are empty for a point that was not measured", () => {
    expect(memoryFacts(toRow(point(2, "sim", {}, false)), false)).toEqual([]);
  });
});
