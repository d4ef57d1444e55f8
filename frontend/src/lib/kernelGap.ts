// The kernel-gap callout of a layer profile.
// For ONNX pairs the job compares the profile's simulated SQNR at each model output with the SQNR the
// deployed runtime (fused int8 kernels) measured on the same samples; a significant gap means the runtime
// loses more than the per-layer numbers show. Its note is also among the profile's notes.
import type { LayerProfile } from "../api/types";

export type KernelGap = NonNullable<LayerProfile["kernel_gap"]>[number];

/** The outputs whose runtime kernels lose significantly more than simulated quantization. */
export function significantKernelGaps(profile: LayerProfile): KernelGap[] {
  return (profile.kernel_gap ?? []).filter((gap) => gap.significant);
}

function gapSqnr(value: number | null | undefined, infinite: boolean): string {
  if (infinite) return "∞ dB";
  return typeof value === "number" && Number.isFinite(value) ? `${value.toFixed(1)} dB` : "—";
}

/** "Runtime kernels lose 16.7 dB more than simulated quantization at output logits". */
export function kernelGapHeadline(gap: KernelGap): string {
  const where = `at output ${gap.output}`;
  if (typeof gap.gap_db === "number" && Number.isFinite(gap.gap_db))
    return `Runtime kernels lose ${gap.gap_db.toFixed(1)} dB more than simulated quantization ${where}`;
  return `Runtime kernels add error that simulated quantization does not predict ${where}`;
}

/** "runtime 25.2 dB, simulated 41.8 dB". */
export function kernelGapNumbers(gap: KernelGap): string {
  return `runtime ${gapSqnr(gap.runtime_sqnr_db, gap.runtime_sqnr_db_infinite)}, simulated ${gapSqnr(
    gap.simulated_sqnr_db,
    gap.simulated_sqnr_db_infinite,
  )}`;
}

/** The profile's notes without those the kernel-gap callout already shows. */
export function notesBesideKernelGaps(profile: LayerProfile): string[] {
  const shown = new Set(significantKernelGaps(profile).map((gap) => gap.note));
  return (profile.notes ?? []).filter((note) => !shown.has(note));
}
