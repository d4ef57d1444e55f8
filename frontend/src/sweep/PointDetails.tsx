// One point of a sweep: what it is, its fidelity (measured on the deployed file or simulated) and cost (and, for several techniques, which causes how much
// of the divergence), whether a real runtime executes it (and how far that differs from the simulation), its
// latency per batch size against fp32, its run-time memory, the export's manifest, and the download of the exported model (a zip of
// model.onnx + manifest.json).
import { exportHref } from "../api/sweeps";
import { ChartPanel } from "../components/ChartPanel";
import { Empty } from "../components/QueryView";
import { formatBytes, formatCount, formatNumber } from "../lib/format";
import type { PointCost } from "../api/types";
import { goldenOf, slowerThanBigger, slowerThanGolden, type SweepRow } from "../lib/sweep";
import { latencyCsv, latencyRows } from "../lib/sweepTable";
import { fidelityFacts, type Fact } from "../lib/pointFidelity";
import { memoryFacts } from "../lib/pointMemory";
import { RecoverButton } from "../recovery/RecoverButton";
import { Attribution } from "./Attribution";
import { FidelitySource } from "./FidelitySource";
import { useRevealOnOpen } from "../components/reveal";

function Facts({ facts, label }: { facts: Fact[]; label: string }) {
  return (
    <table className="table compact facts-table" aria-label={label}>
      <tbody>
        {facts.map(([k, v]) => (
          <tr key={k}>
            <th scope="row">{k}</th>
            <td className="num">{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function costFacts(c: PointCost | null): Fact[] {
  const n = (key: keyof PointCost) => {
    const v = c?.[key];
    return typeof v === "number" ? v : null;
  };
  return [
    ["Size", `${formatBytes(n("size_bytes"))} (fp32 ${formatBytes(n("size_bytes_fp32"))})`],
    ["Compression ratio", `${formatNumber(n("compression_ratio"), 3)} ×`],
    ["Size if sparse", formatBytes(n("size_bytes_sparse"))],
    ["Parameters kept", `${formatCount(n("params_kept"))} of ${formatCount(n("params_total"))}`],
    ["Non-zero parameters", formatCount(n("params_nonzero"))],
    ["MACs (effective)", `${formatCount(n("macs_effective"))} (dense ${formatCount(n("macs"))})`],
    ["BOPs (effective)", `${formatCount(n("bops_effective"))} (fp32 ${formatCount(n("bops_fp32"))})`],
  ];
}

function RuntimeFacts({ row }: { row: SweepRow }) {
  const r = row.point?.runtime ?? null;
  const matches = r?.matches_simulation;
  return (
    <>
      <p>
        {row.runtime === "real" ? (
          <span className="badge badge-good">runs in a real runtime</span>
        ) : row.runtime === "simulated" && row.realExport === "simulated-float" ? (
          <span className="badge badge-busy">dense float32 only (no real kernel)</span>
        ) : row.runtime === "simulated" ? (
          <span className="badge badge-busy">simulated only</span>
        ) : (
          <span className="badge badge-muted">runtime unknown</span>
        )}{" "}
        {r?.needs_sparse_kernels === true && (
          <span className="badge badge-busy" title="N:M sparsity: no runtime measured here has sparse kernels">
            needs sparse kernels (no speed or size claimed)
          </span>
        )}{" "}
        {r?.runtime && <span className="muted small-text">{r.runtime}</span>}
      </p>
      <Facts
        label="Runtime"
        facts={[
          ["Deployable form", row.realExport ?? "none"],
          ["Other real forms", (r?.real_kinds ?? []).slice(1).join(", ") || "—"],
          [
            "Same numbers as the simulation",
            matches === true ? "yes" : matches === false ? "no (the runtime's own kernels)" : "—",
          ],
        ]}
      />
      {row.runtimeNote && <p className="note small-text runtime-note">{row.runtimeNote}</p>}
    </>
  );
}

function MemoryFacts({ row, rows }: { row: SweepRow; rows: readonly SweepRow[] }) {
  const facts = memoryFacts(row, goldenOf(row, rows) === row);
  if (facts.length === 0)
    return <Empty>Not measured: the sweep ran with memory off, or the point has no runnable export.</Empty>;
  return (
    <>
      <Facts label="Run-time memory" facts={facts} />
      <p className="muted small-text">
        {row.point?.memory?.file ?? "The export"} in onnxruntime in a child process: its peak resident memory (VmHWM)
        less its memory before the session was created.
      </p>
    </>
  );
}

function LatencyTable({ row }: { row: SweepRow }) {
  const rows = latencyRows(row);
  const latency = row.point?.latency;
  const settings = latency?.settings;
  const env = latency?.environment;
  if (rows.length === 0)
    return <Empty>Not timed: the sweep ran with latency off, or the point has no runnable export.</Empty>;
  return (
    <ChartPanel
      title={`Latency of ${row.label}`}
      csv={() => latencyCsv(row)}
      caption={[
        `${latency?.file ?? "the export"} in ${env?.runtime ?? "ONNX Runtime"} ${env?.onnxruntime_version ?? ""}, ${String(env?.intra_op_threads ?? "?")} thread(s),`,
        `${String(settings?.repeats ?? "?")} repeats after ${String(settings?.warmup ?? "?")} warm-up runs (min and max in the CSV); per sample: p50 / batch size.`,
        row.runtime === "simulated"
          ? "Simulated only: this times the simulation's float graph, not a deployable model."
          : "",
      ]
        .filter(Boolean)
        .join(" ")}
    >
      <table className="table compact latency" aria-label="Latency per batch size">
        <thead>
          <tr>
            <th className="num">Batch</th>
            <th className="num">p50</th>
            <th className="num">p90</th>
            <th className="num">Mean</th>
            <th className="num">Per sample</th>
            <th className="num">vs fp32</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((l) => (
            <tr key={l.batch}>
              <td className="num">{l.batch}</td>
              <td className="num">{formatNumber(l.p50)} ms</td>
              <td className="num">{formatNumber(l.p90)} ms</td>
              <td className="num">{formatNumber(l.mean)} ms</td>
              <td className="num">{formatNumber(l.perSample)} ms</td>
              <td className={`num${l.ratio !== null && l.ratio > 1 && row.label !== "fp32" ? " flip" : ""}`}>
                {l.ratio === null ? "—" : `${formatNumber(l.ratio, 3)} ×`}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </ChartPanel>
  );
}

function Manifest({ row }: { row: SweepRow }) {
  const m = row.manifest;
  if (!m) return <Empty>No export: the sweep ran with export off.</Empty>;
  const sha = (v: string | null) => (v ? `${v.slice(0, 16)}…` : "—");
  const matches = m.matches_simulation;
  return (
    <>
      <Facts
        label="Export manifest"
        facts={[
          ["Kind", m.kind || "—"],
          ["File", m.file || "—"],
          ["File size", formatBytes(m.file_size_bytes)],
          ["File SHA-256", sha(m.file_sha256)],
          ["Source model SHA-256", sha(m.source_model_sha256 ?? m.source_sha256)],
          ["Reproduces the simulation", matches === true ? "yes" : matches === false ? "no" : "—"],
          ["ONNX opset", formatNumber(m.opset)],
          ["ONNX Runtime", m.onnxruntime_version ?? "—"],
        ]}
      />
      {m.notes.map((n) => (
        <p key={n} className="muted small-text">
          {n}
        </p>
      ))}
      <details className="more-settings">
        <summary>Whole manifest (JSON)</summary>
        <pre className="json">{JSON.stringify(m, null, 2)}</pre>
      </details>
    </>
  );
}

export function PointDetails({
  row,
  onFrontier,
  knee,
  slowBatch,
  rows,
}: {
  row: SweepRow;
  onFrontier: boolean;
  knee: boolean;
  slowBatch: number | null;
  /** The sweep's points (its fp32 point is the latency reference). */
  rows: readonly SweepRow[];
}) {
  const fidelity = row.point?.fidelity ?? null;
  const cost = row.point?.cost ?? null;
  const notes = [...(row.point?.notes ?? []), ...(cost?.notes ?? [])];
  const warnings = fidelity?.warnings ?? [];
  const attribution = row.point?.attribution;
  const panel = useRevealOnOpen<HTMLElement>(row.index);
  return (
    <section ref={panel} className="panel point-details" aria-labelledby="point-heading" data-point={row.index}>
      <div className="chart-head">
        <div>
          <h3 id="point-heading">
            Point {row.index}: <code>{row.label}</code>
          </h3>
          <p className="muted point-description">
            {row.description} {knee && <span className="badge badge-knee">★ knee</span>}{" "}
            {onFrontier ? (
              <span className="badge badge-good">on the frontier</span>
            ) : (
              <span className="badge badge-muted">not on the frontier</span>
            )}{" "}
            {slowerThanGolden(row, slowBatch, rows) && (
              <span className="badge badge-bad">slower than fp32 at batch {slowBatch}</span>
            )}{" "}
            {slowerThanBigger(row) && (
              <span className="badge badge-bad slower-than-bigger">{slowerThanBigger(row)}</span>
            )}
          </p>
        </div>
        {row.exportAvailable ? (
          <a
            className="button"
            href={exportHref(row.jobId, row.index)}
            download
            aria-label={`Export ${row.label}: download model.onnx and its manifest as a zip`}
          >
            Export (ONNX zip)
          </a>
        ) : (
          <span className="muted small-text">No export (the sweep ran with export off)</span>
        )}
      </div>
      <RecoverButton sweepJobId={row.jobId} index={row.index} />
      {row.point?.calibration?.rule && (
        <p className="note small-text point-calibration">
          Calibration: {row.point.calibration.rule}
          {row.point.calibration.disjoint ? " (no calibration sample was evaluated)." : "."}
        </p>
      )}
      {[...notes, ...warnings].map((n) => (
        <p key={n} className="note small-text">
          {n}
        </p>
      ))}
      <div className="two-col">
        <div>
          <h4>Fidelity against the golden model</h4>
          <FidelitySource point={row.point} />
          <Facts label="Fidelity" facts={fidelityFacts(fidelity)} />
          <Attribution attribution={attribution} label={row.label} />
          <h4>Cost</h4>
          <Facts label="Cost" facts={costFacts(cost)} />
        </div>
        <div>
          <h4>Runtime</h4>
          <RuntimeFacts row={row} />
          <h4>Latency</h4>
          <LatencyTable row={row} />
          <h4>Run-time memory</h4>
          <MemoryFacts row={row} rows={rows} />
          <h4>Export</h4>
          <Manifest row={row} />
        </div>
      </div>
      {row.config.type !== "none" && (
        <details className="more-settings">
          <summary>Configuration (JSON)</summary>
          <pre className="json">{JSON.stringify(row.config, null, 2)}</pre>
        </details>
      )}
    </section>
  );
}
