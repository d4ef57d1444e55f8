// Where the point's fidelity figures come from: the deployed file (the export the sweep timed, run in
// onnxruntime) or the simulation; with both, simulated against measured side by side with the difference.
import type { SweepPointDoc } from "../api/types";
import { fidelityGap, fidelitySource, fidelitySourceLine } from "../lib/fidelitySource";

export function FidelitySource({ point }: { point: SweepPointDoc | null }) {
  const line = fidelitySourceLine(point);
  if (line === null) return null;
  const gap = fidelityGap(point);
  const measured = fidelitySource(point) === "measured";
  return (
    <>
      <p className="small-text fidelity-source">
        <span className={`badge ${measured ? "badge-good" : "badge-muted"}`}>
          {measured ? "measured" : "simulated"}
        </span>{" "}
        Fidelity {line}
        {measured ? "; the frontier uses these figures." : "."}
      </p>
      {gap.length > 0 && (
        <table className="table compact fidelity-gap" aria-label="Simulated against measured fidelity">
          <thead>
            <tr>
              <th scope="col">Metric</th>
              <th scope="col" className="num">
                Simulated
              </th>
              <th scope="col" className="num">
                Measured ({point?.fidelity_export_kind ?? "export"})
              </th>
              <th scope="col" className="num">
                Difference
              </th>
            </tr>
          </thead>
          <tbody>
            {gap.map((r) => (
              <tr key={r.label}>
                <th scope="row">{r.label}</th>
                <td className="num">{r.simulated}</td>
                <td className="num">{r.measured}</td>
                <td className="num">{r.difference}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
