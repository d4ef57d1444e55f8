// A sweep point's run-time memory (the peak RSS of an onnxruntime session running its export, measured by the
// worker in a child process) as the facts its details show.
import { formatNumber } from "./format";
import type { Fact } from "./pointFidelity";
import type { SweepRow } from "./sweep";

/** Empty when the point was not measured; the ratio to fp32 only for a compressed point that has one. */
export function memoryFacts(row: SweepRow, isGolden: boolean): Fact[] {
  const m = row.point?.memory;
  if (!m) return [];
  const ratio = row.objectives.runtime_memory_ratio;
  const vsGolden = typeof ratio === "number" && !isGolden ? ` (${formatNumber(ratio, 3)} × fp32)` : "";
  return [
    ["Session (peak − baseline)", `${formatNumber(m.session_mib, 4)} MiB${vsGolden}`],
    ["Peak RSS of the process", `${formatNumber(m.peak_rss_mib, 4)} MiB`],
    ["Baseline (Python + onnxruntime)", `${formatNumber(m.baseline_rss_mib, 4)} MiB`],
    ["After loading the session", `${formatNumber(m.after_load_rss_mib, 4)} MiB`],
    ["Batch size, runs", `${String(m.batch_size ?? "?")}, ${String(m.runs ?? "?")}`],
  ];
}
