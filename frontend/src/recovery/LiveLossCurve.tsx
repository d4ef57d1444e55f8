// The live loss curve of a running recovery job: each progress message its poll brings (distill / qat steps)
// is kept as a sample (liveCurve.ts) and drawn; nothing before the first training step.
import { useMemo, useState } from "react";
import { LossCurveChart } from "./LossCurveChart";
import { addSample, liveCurves, parseProgress, type ProgressSample } from "./liveCurve";

export function LiveLossCurve({ message }: { message: string | null | undefined }) {
  // Derived from the previous render's samples when the message changes (React's "adjusting state on a prop
  // change" pattern): no effect, no extra render pass with stale samples.
  const [seen, setSeen] = useState<{ message: string | null | undefined; samples: readonly ProgressSample[] }>({
    message: undefined,
    samples: [],
  });
  if (seen.message !== message) setSeen({ message, samples: addSample(seen.samples, parseProgress(message)) });
  const curves = useMemo(() => liveCurves(seen.samples), [seen.samples]);
  return curves.length > 0 ? <LossCurveChart curves={curves} live /> : null;
}
