import { describe, expect, it } from "vitest";
import type { LayerProfile } from "../api/types";
import {
  kernelGapHeadline,
  kernelGapNumbers,
  type KernelGap,
  notesBesideKernelGaps,
  significantKernelGaps,
} from "./kernelGap";
import { PROFILE } from "./layerProfileFixtures";

describe("kernel gap", () => {
  const NOTE = "Runtime kernels lose 16.7 dB more than simulated quantization at output 'logits': …";
  const gap = (over: Partial<KernelGap>): KernelGap => ({
    output: "logits",
    compressed_output: "logits",
    simulated_sqnr_db: 41.83,
    simulated_sqnr_db_infinite: false,
    runtime_sqnr_db: 25.16,
    runtime_sqnr_db_infinite: false,
    gap_db: 16.67,
    significant: true,
    threshold_db: 3,
    note: NOTE,
    ...over,
  });
  const profile = (kernel_gap: KernelGap[] | null | undefined): LayerProfile => ({
    ...PROFILE,
    notes: ["ONNX tensors matched by name", NOTE],
    kernel_gap,
  });

  it("keeps only the significant gaps", () => {
    const small = gap({ output: "aux", gap_db: 0.2, significant: false, note: null });
    expect(significantKernelGaps(profile([gap({}), small])).map((g) => g.output)).toEqual(["logits"]);
    expect(significantKernelGaps(profile([small]))).toEqual([]);
    expect(significantKernelGaps(profile(null))).toEqual([]);
    expect(significantKernelGaps(profile(undefined))).toEqual([]);
  });

  it("says how much more the runtime loses, and where", () => {
    expect(kernelGapHeadline(gap({}))).toBe(
      "Runtime kernels lose 16.7 dB more than simulated quantization at output logits",
    );
    expect(kernelGapNumbers(gap({}))).toBe("runtime 25.2 dB, simulated 41.8 dB");
    const exact = gap({ simulated_sqnr_db: null, simulated_sqnr_db_infinite: true, gap_db: null });
    expect(kernelGapHeadline(exact)).toBe(
      "Runtime kernels add error that simulated quantization does not predict at output logits",
    );
    expect(kernelGapNumbers(exact)).toBe("runtime 25.2 dB, simulated ∞ dB");
  });

  it("leaves the callout's notes out of the other notes", () => {
    expect(notesBesideKernelGaps(profile([gap({})]))).toEqual(["ONNX tensors matched by name"]);
    expect(notesBesideKernelGaps(profile(null))).toEqual(["ONNX tensors matched by name", NOTE]);
  });
});
