// The loss curve of a recovery's training steps (distill, qat): the training loss per step and the held-out
// KL where it was measured, on a log axis (both fall by orders of magnitude), the kept step marked. `live`:
// the curve sampled from the job's progress while it trains (liveCurve.ts).
import type { Data, Layout } from "plotly.js";
import { useMemo } from "react";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { POLL_MS } from "../api/polling";
import type { LossCurve } from "./training";

const LAYOUT: Partial<Layout> = {
  xaxis: { title: { text: "training step" } },
  yaxis: { title: { text: "loss / KL (nats)" }, type: "log" },
  legend: { orientation: "h", x: 0, y: -0.25 },
  margin: { l: 60, r: 20, t: 32, b: 80 },
};

const COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756"];

export function LossCurveChart({ curves, live = false }: { curves: LossCurve[]; live?: boolean }) {
  const data = useMemo<Data[]>(
    () =>
      curves.flatMap((c, i) => {
        const color = COLORS[i % COLORS.length];
        const best = c.bestStep !== null ? c.klSteps.indexOf(c.bestStep) : -1;
        const traces: Data[] = [
          {
            type: "scatter",
            mode: live ? "lines+markers" : "lines",
            name: `${c.method}: training loss`,
            x: c.steps,
            y: c.loss,
            line: { color, width: 1 },
            opacity: 0.6,
          },
          {
            type: "scatter",
            mode: "lines+markers",
            name: `${c.method}: held-out KL`,
            x: c.klSteps,
            y: c.kl,
            line: { color, width: 2, dash: "dot" },
          },
        ];
        if (best >= 0)
          traces.push({
            type: "scatter",
            mode: "markers",
            name: `${c.method}: kept (step ${String(c.bestStep)})`,
            x: c.klSteps.slice(best, best + 1),
            y: c.kl.slice(best, best + 1),
            marker: { color, size: 12, symbol: "star" },
          });
        return traces;
      }),
    [curves, live],
  );
  const early = curves.filter((c) => c.stoppedEarly).map((c) => c.method);
  return (
    <ChartPanel
      title={live ? "Recovery loss curve (live)" : "Recovery loss curve"}
      caption={
        live ? (
          <>
            Sampled from the job&apos;s progress at each poll (every {POLL_MS / 1000} s): the loss of the step running
            then, and every held-out KL measurement seen. Every step is stored, and drawn here, when the job ends.
          </>
        ) : (
          <>
            Training loss per step (temperature KL, plus cross-entropy when weighted) and the KL to the golden model on
            calibration data kept out of training, where measured; the state with the lowest held-out KL is kept.
            {early.length > 0 && ` Stopped early: ${early.join(", ")}.`}
          </>
        )
      }
      csv={() => ({
        header: ["method", "step", "loss", "heldout_kl"],
        rows: curves.flatMap((c) =>
          c.steps.map((step, i) => {
            const at = c.klSteps.indexOf(step);
            return [c.method, step, c.loss[i] ?? null, at >= 0 ? (c.kl[at] ?? null) : null];
          }),
        ),
      })}
    >
      <Plot data={data} layout={LAYOUT} filename={live ? "recovery-loss-curve-live" : "recovery-loss-curve"} />
    </ChartPanel>
  );
}
