import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { SweepPointDoc } from "../api/types";
import { pointFidelity, sweepPointDoc } from "../lib/resultFixtures";
import type { SweepRow } from "../lib/sweep";
import { FidelitySource } from "./FidelitySource";
import { PointsTable } from "./PointsTable";

const measured = sweepPointDoc({
  fidelity: pointFidelity({ kl_mean: 0.00042739 }),
  fidelity_simulated: pointFidelity({ kl_mean: 0.00033037 }),
  fidelity_source: "measured",
  fidelity_export_kind: "real-int8-qdq",
  fidelity_note: "measured on the deployed file (real-int8-qdq)",
});
const simulated = sweepPointDoc({
  fidelity: pointFidelity({ kl_mean: 0.002 }),
  fidelity_source: "simulated",
  fidelity_note: "simulated: no runnable export (the simulated file is not a runtime form)",
});

const row = (index: number, label: string, point: SweepPointDoc): SweepRow => ({
  id: `job:${index.toString()}`,
  jobId: "job",
  index,
  label,
  description: label,
  config: { type: "none" },
  objectives: { kl_mean: point.fidelity?.kl_mean ?? null },
  runtime: point.fidelity_source === "measured" ? "real" : "simulated",
  realExport: point.fidelity_export_kind,
  runtimeNote: null,
  exportAvailable: true,
  point,
  manifest: null,
});

describe("the point's fidelity source", () => {
  it("says measured on the deployed file and shows simulated against measured with the difference", () => {
    const html = renderToStaticMarkup(<FidelitySource point={measured} />);
    expect(html).toContain("Fidelity measured on the deployed file (real-int8-qdq)");
    expect(html).toContain('aria-label="Simulated against measured fidelity"');
    expect(html).toContain("3.304e-4 nats");
    expect(html).toContain("4.274e-4 nats");
    expect(html).toContain("+9.702e-5 nats");
  });

  it("says simulated (no runnable export), with no comparison", () => {
    const html = renderToStaticMarkup(<FidelitySource point={simulated} />);
    expect(html).toContain("Fidelity simulated (no runnable export).");
    expect(html).not.toContain("Simulated against measured");
    expect(renderToStaticMarkup(<FidelitySource point={sweepPointDoc()} />)).toBe("");
  });

  it("marks simulated-only points in the table", () => {
    const html = renderToStaticMarkup(
      <PointsTable
        rows={[row(1, "w8a8", measured), row(2, "a8", simulated)]}
        available={["kl_mean"]}
        frontier={null}
        specs={[]}
        batch={null}
        selected={null}
        sort="index"
        order="asc"
        onSort={() => undefined}
        onSelect={() => undefined}
        name="sweep"
      />,
    );
    const rows = html.split("<tr").slice(2); // the header's row, then one per point
    expect(rows).toHaveLength(2);
    expect(rows[0]).not.toContain("sim. fidelity");
    expect(rows[1]).toContain("sim. fidelity");
    expect(rows[1]).toContain('title="Fidelity simulated (no runnable export)"');
  });
});
