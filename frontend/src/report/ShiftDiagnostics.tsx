// Why the compressed model diverges, from the per-layer profile's activation-shift diagnostics: the ranked
// likely causes with the numbers behind them, clipping and dead units (and, when the job had a calibration
// set, the share outside the calibration range) per layer as bars, a table of every layer's ranges, clip
// rate, dead units and error amplification, and one layer's golden vs compressed activation histogram (pick
// a row). Profiles stored before the diagnostics existed show nothing.
import { useMemo, useState } from "react";
import type { LayerProfile } from "../api/types";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import {
  CAUSE_LABELS,
  calibrationNote,
  causeNumbers,
  causesOf,
  formatAmplification,
  formatCalibration,
  formatDeadUnits,
  formatRange,
  hasCalibration,
  hasClipping,
  hasDeadUnits,
  histogramFigure,
  noCauseNote,
  outsideNote,
  shiftCsv,
  shiftFigure,
  shiftRows,
  shiftSummary,
  type LikelyCause,
  type ShiftRow,
} from "../lib/activationShift";
import { formatPercent } from "../lib/format";

function Cause({ cause }: { cause: LikelyCause }) {
  return (
    <li className="likely-cause">
      <strong>{CAUSE_LABELS[cause.kind]}</strong>: {cause.message}{" "}
      <span className="muted small-text">
        ({causeNumbers(cause).join(", ")}; {cause.score == null ? "—" : cause.score.toFixed(1)}× its threshold)
      </span>
    </li>
  );
}

export function LikelyCauses({
  causes,
  calibrationSamples,
}: {
  causes: LikelyCause[];
  calibrationSamples?: number | null;
}) {
  return (
    <section className="panel likely-causes" aria-labelledby="likely-causes-heading">
      <h3 id="likely-causes-heading">Likely causes</h3>
      {causes.length === 0 ? (
        <p className="muted">{noCauseNote(calibrationSamples)}</p>
      ) : (
        <ol>
          {causes.map((c) => (
            <Cause key={`${c.kind}:${c.layer}:${c.to_layer ?? ""}`} cause={c} />
          ))}
        </ol>
      )}
    </section>
  );
}

function ShiftTable({
  rows,
  selected,
  onSelect,
}: {
  rows: ShiftRow[];
  selected: string | null;
  onSelect: (name: string) => void;
}) {
  const calibration = hasCalibration(rows);
  return (
    <div className="scroll scroll-y">
      <table className="table compact shift-table" aria-label="Activation shift per layer">
        <thead>
          <tr>
            <th className="num">Depth</th>
            <th>Layer</th>
            <th>Golden range</th>
            <th>Compressed range</th>
            <th title="What the compressed layer's quantizer can represent">Quantizer range</th>
            <th
              className="num"
              title="Compressed values entering the quantizer that saturate (more than half a step outside its range)"
            >
              Clipped
            </th>
            <th className="num" title="Golden values that the quantizer would saturate">
              Golden outside
            </th>
            <th className="num" title="ReLU-family layers: golden > 0 but exactly 0 in the compressed model">
              Dead units
            </th>
            <th className="num" title="Accumulated error / the error the layer adds alone">
              Error amplification
            </th>
            {calibration && (
              <th
                className="num"
                title="Evaluation golden values outside the layer's golden range on the calibration set"
              >
                Outside calibration
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.name} className={r.name === selected ? "selected" : undefined}>
              <td className="num">{r.depth}</td>
              <td>
                <button
                  type="button"
                  className="link"
                  onClick={() => {
                    onSelect(r.name);
                  }}
                  title={r.name}
                >
                  {r.label}
                </button>
              </td>
              <td>{formatRange(r.shift.golden_min, r.shift.golden_max)}</td>
              <td>{formatRange(r.shift.compressed_min, r.shift.compressed_max)}</td>
              <td>{formatRange(r.shift.quantizer_min, r.shift.quantizer_max)}</td>
              <td className="num">{formatPercent(r.shift.clip_rate, 3)}</td>
              <td className="num">{formatPercent(r.shift.golden_outside_rate, 3)}</td>
              <td className="num">{formatDeadUnits(r.shift)}</td>
              <td className="num">{formatAmplification(r.shift.error_amplification)}</td>
              {calibration && (
                <td
                  className="num"
                  title={`calibration range ${formatRange(r.shift.calibration_min, r.shift.calibration_max)}`}
                >
                  {formatCalibration(r.shift)}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ShiftDiagnostics({ profile }: { profile: LayerProfile }) {
  const rows = useMemo(() => shiftRows(profile), [profile]);
  const causes = causesOf(profile);
  const [picked, setPicked] = useState<string | null>(null);
  const worstClip = useMemo(
    () =>
      rows.reduce<ShiftRow | null>((a, r) => ((r.shift.clip_rate ?? -1) > (a?.shift.clip_rate ?? -1) ? r : a), null),
    [rows],
  );
  const selected = rows.find((r) => r.name === picked) ?? worstClip ?? rows[0];
  const bars = useMemo(() => shiftFigure(rows), [rows]);
  const histogram = useMemo(() => (selected ? histogramFigure(selected) : null), [selected]);
  if (rows.length === 0 && causes.length === 0) return null;
  return (
    <section className="activation-shift" aria-labelledby="activation-shift-heading">
      <h3 id="activation-shift-heading">Activation shift</h3>
      <p className="shift-summary">{shiftSummary(rows)}</p>
      <LikelyCauses causes={causes} calibrationSamples={profile.calibration_samples} />
      {rows.length > 0 && (
        <>
          <div className="two-col">
            {(hasClipping(rows) || hasDeadUnits(rows) || hasCalibration(rows)) && (
              <ChartPanel
                title={
                  hasCalibration(rows)
                    ? "Clipping, dead units and calibration range per layer"
                    : "Clipping and dead units per layer"
                }
                csv={() => shiftCsv(rows)}
                caption={[
                  "Clipped: compressed values entering the layer's quantizer that saturate (more than half a step outside its range; the side the layer's own ReLU or Clip clamps is left out). Dead units: ReLU-family layers' values positive in the golden model and exactly 0 in the compressed one.",
                  hasCalibration(rows)
                    ? "Outside calibration: the evaluation set's golden values outside the layer's golden range on the calibration set."
                    : "",
                ]
                  .filter(Boolean)
                  .join(" ")}
              >
                <Plot data={bars.data} layout={bars.layout} filename="layer-clipping-dead-units" height={320} />
              </ChartPanel>
            )}
            {selected && histogram && histogram.data.length > 0 && (
              <ChartPanel
                title={`Activations of ${selected.label}`}
                csv={() => shiftCsv([selected])}
                caption={[
                  "Golden and compressed values in the same bins (of large layers, an evenly spaced subset of each batch).",
                  selected.shift.quantizer_min != null ? "Dashed: the quantizer's range." : "",
                  outsideNote(selected.shift),
                  "Pick a layer in the table to see its histogram.",
                ]
                  .filter(Boolean)
                  .join(" ")}
              >
                <Plot data={histogram.data} layout={histogram.layout} filename="layer-activations" height={320} />
              </ChartPanel>
            )}
          </div>
          <ShiftTable rows={rows} selected={selected?.name ?? null} onSelect={setPicked} />
          <p className="muted small-text">{calibrationNote(profile, rows)}</p>
        </>
      )}
    </section>
  );
}
