// The kernel-gap callout of the per-layer profile: the deployed runtime's int8 kernels lose more at a model
// output than the simulated quantization the profile measures (e.g. saturation on x86-64 without VNNI).
import type { LayerProfile } from "../api/types";
import { kernelGapHeadline, kernelGapNumbers, significantKernelGaps } from "../lib/kernelGap";

export function KernelGapCallout({ profile }: { profile: LayerProfile }) {
  const gaps = significantKernelGaps(profile);
  if (gaps.length === 0) return null;
  return (
    <div className="warning kernel-gap" role="status">
      {gaps.map((gap) => (
        <p key={gap.output}>
          <strong>{kernelGapHeadline(gap)}</strong> ({kernelGapNumbers(gap)}, SQNR on the profile&apos;s samples).
        </p>
      ))}
      <p className="small-text">
        The per-layer numbers are simulated quantization (quantize-dequantize in float); the deployed ONNX Runtime fuses
        the int8 groups into integer kernels. On x86-64 CPUs without VNNI its U8S8 kernels can saturate: quantize with{" "}
        <code>reduce_range=True</code> or use U8U8. Otherwise the runtime fuses ops differently than the simulation.
      </p>
      {gaps.map(
        (gap) =>
          gap.note && (
            <details key={gap.output} className="small-text">
              <summary>
                Details for <code>{gap.output}</code>
              </summary>
              {gap.note}
            </details>
          ),
      )}
    </div>
  );
}
