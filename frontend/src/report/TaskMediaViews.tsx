// The inspector's pictures and sound (issue 30): a segmenter's label maps over the input picture (opacity,
// disagreement marked), an image output's golden, compressed and difference pictures zoomed and panned
// together, and a signal's waveforms to play with their outlines. Shaping is in taskMedia.ts.
import { type PointerEvent, useRef, useState } from "react";
import { Checkbox } from "../components/Checkbox";
import { formatNumber } from "../lib/format";
import type { TaskSample } from "./inspectorQueries";
import {
  type Pan,
  ZOOMS,
  classShares,
  clampPan,
  differenceScale,
  displaySize,
  outlinePath,
  outlinePeak,
  panelSize,
  zoomPan,
} from "./taskMedia";

type Segmentation = Extract<TaskSample, { task: "segmentation" }>;
type ImageOutput = Extract<TaskSample, { task: "image" }>;
type Signal = Extract<TaskSample, { task: "signal" }>;

const percent = (v: number | null | undefined) => (v == null ? "—" : `${formatNumber(100 * v, 3)} %`);

export function SegmentationMasks({ sample }: { sample: Segmentation }) {
  const [opacity, setOpacity] = useState(0.6);
  const [marked, setMarked] = useState(false);
  const size = panelSize(sample.image_size);
  const maps: [string, string | null | undefined][] = [
    ["truth", sample.truth],
    ["golden", sample.golden],
    ["compressed", sample.compressed],
  ];
  return (
    <div className="task-sample">
      <div className="box-legend">
        <label className="inline">
          Mask opacity{" "}
          <input
            type="range"
            min={0}
            max={100}
            value={Math.round(opacity * 100)}
            aria-label="Mask opacity"
            onChange={(e) => {
              setOpacity(Number(e.target.value) / 100);
            }}
          />{" "}
          {Math.round(opacity * 100)} %
        </label>
        <Checkbox checked={marked} onChange={setMarked}>
          Mark the {sample.disagreeing_pixels} pixels where the models differ
        </Checkbox>
      </div>
      <div className="media-panels">
        {maps
          .filter(([, src]) => src)
          .map(([role, src]) => (
            <figure key={role} data-testid={`mask-${role}`}>
              <div className="mask-stack" style={size}>
                {sample.picture && <img src={sample.picture} alt={`Input of sample ${sample.index.toString()}`} />}
                <img src={src ?? undefined} alt={`${role} label map`} style={{ opacity }} />
                {marked && role !== "truth" && <img src={sample.disagreement} alt="pixels where the models differ" />}
              </div>
              <figcaption>{role === "truth" ? "truth (mask)" : role}</figcaption>
            </figure>
          ))}
      </div>
      <p className="muted">
        Pixel agreement {percent(sample.pixel_agreement)}, IoU against the golden map {percent(sample.iou_vs_golden)}.
        {sample.picture ? "" : " The input picture is not available here."}
        {sample.classes_clipped ? " Class ids above 255 are drawn in class 255's colour." : ""}
      </p>
      <table className="compact">
        <thead>
          <tr>
            <th>Class</th>
            <th>golden</th>
            <th>compressed</th>
            {sample.truth && <th>truth</th>}
          </tr>
        </thead>
        <tbody>
          {classShares(sample.classes, sample.n_pixels).map((c) => (
            <tr key={c.label}>
              <td>
                <span style={{ color: c.colour }}>■</span> {c.label}
              </td>
              <td>{percent(c.golden)}</td>
              <td>{percent(c.compressed)}</td>
              {sample.truth && <td>{percent(c.truth)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ImageOutputs({ sample }: { sample: ImageOutput }) {
  const [zoom, setZoom] = useState(1);
  const [pan, setPan] = useState<Pan>({ x: 0, y: 0 });
  const drag = useRef<{ x: number; y: number; pan: Pan } | null>(null);
  const panel = panelSize(sample.image_size);
  const shown = displaySize(sample.image_size, zoom);
  const onDown = (e: PointerEvent<HTMLDivElement>) => {
    drag.current = { x: e.clientX, y: e.clientY, pan };
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const onMove = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d) return;
    setPan(clampPan({ x: d.pan.x + e.clientX - d.x, y: d.pan.y + e.clientY - d.y }, sample.image_size, zoom));
  };
  const pictures: [string, string][] = [
    ["golden", sample.golden],
    ["compressed", sample.compressed],
    ["difference", sample.difference],
  ];
  return (
    <div className="task-sample">
      <div className="box-legend">
        <label className="inline">
          Zoom{" "}
          <select
            value={zoom}
            aria-label="Zoom"
            onChange={(e) => {
              const to = Number(e.target.value);
              setPan(zoomPan(pan, sample.image_size, zoom, to));
              setZoom(to);
            }}
          >
            {ZOOMS.map((z) => (
              <option key={z} value={z}>
                {z}×
              </option>
            ))}
          </select>
        </label>
        <span className="muted">{zoom > 1 ? "drag a picture to move all three" : ""}</span>
      </div>
      <div className="media-panels">
        {pictures.map(([role, src]) => (
          <figure key={role} data-testid={`picture-${role}`}>
            <div
              className="zoom-panel"
              style={panel}
              onPointerDown={onDown}
              onPointerMove={onMove}
              onPointerUp={() => (drag.current = null)}
            >
              <img
                src={src}
                alt={`${role} output`}
                draggable={false}
                style={{
                  width: shown.width,
                  height: shown.height,
                  transform: `translate(${pan.x.toString()}px, ${pan.y.toString()}px)`,
                }}
              />
            </div>
            <figcaption>{role}</figcaption>
          </figure>
        ))}
      </div>
      <p className="muted">{differenceScale(sample.difference_gain, sample.value_range)}.</p>
      <dl className="facts">
        <div>
          <dt>PSNR vs golden</dt>
          <dd>{sample.psnr_db == null ? "identical (∞)" : `${formatNumber(sample.psnr_db, 4)} dB`}</dd>
        </div>
        <div>
          <dt>SSIM vs golden</dt>
          <dd>{formatNumber(sample.ssim, 4)}</dd>
        </div>
        <div>
          <dt>max |difference|</dt>
          <dd>{formatNumber(sample.max_abs_difference, 4)}</dd>
        </div>
        <div>
          <dt>Drawn</dt>
          <dd>
            {sample.layout}, black {formatNumber(sample.value_range[0], 4)} to white{" "}
            {formatNumber(sample.value_range[1], 4)}
            {sample.clipped ? `; ${sample.clipped.toString()} compressed values outside, clipped` : ""}
            {sample.nonfinite
              ? `; ${sample.nonfinite.toString()} NaN/inf values (NaN black, its difference white)`
              : ""}
          </dd>
        </div>
      </dl>
    </div>
  );
}

const WAVE_WIDTH = 480;
const WAVE_HEIGHT = 56;
const WAVE_COLOUR: Record<string, string> = { clean: "#2ca02c", golden: "#1f77b4", compressed: "#d62728" };

export function SignalPlayback({ sample }: { sample: Signal }) {
  const roles = (["clean", "golden", "compressed"] as const).filter((r) => sample.outline[r]);
  const peak = outlinePeak(roles.map((r) => sample.outline[r]));
  const db = (v: number | null | undefined) =>
    v == null ? "— (identical, or not finite)" : `${formatNumber(v, 4)} dB`;
  return (
    <div className="task-sample">
      {roles.map((role) => (
        <div key={role} className="signal-row" data-testid={`signal-${role}`}>
          <strong>{role}</strong>
          <svg
            width={WAVE_WIDTH}
            height={WAVE_HEIGHT}
            viewBox={`0 0 ${WAVE_WIDTH.toString()} ${WAVE_HEIGHT.toString()}`}
            role="img"
            aria-label={`${role} waveform`}
          >
            <line x1={0} x2={WAVE_WIDTH} y1={WAVE_HEIGHT / 2} y2={WAVE_HEIGHT / 2} stroke="#ccc" />
            <path d={outlinePath(sample.outline[role] ?? [], WAVE_WIDTH, WAVE_HEIGHT, peak)} fill={WAVE_COLOUR[role]} />
          </svg>
          {sample.audio[role] ? (
            <audio controls preload="none" src={sample.audio[role] ?? undefined} aria-label={`${role} audio`} />
          ) : (
            <span className="muted">not playable here (past the exported file's byte budget)</span>
          )}
        </div>
      ))}
      <p className="muted">
        {formatNumber(sample.duration_s, 3)} s at {sample.sample_rate} Hz, 16-bit WAV
        {sample.gain < 1 ? `, all three scaled by ${formatNumber(sample.gain, 3)} to fit full scale` : ""}; outlines
        share one scale (±{formatNumber(peak, 3)}).
        {Object.values(sample.nonfinite).some((n) => n > 0)
          ? " Some values were NaN/inf: stored as 0 / the float32 maximum."
          : ""}
      </p>
      <dl className="facts">
        <div>
          <dt>SNR vs golden</dt>
          <dd>{db(sample.snr_db_vs_golden)}</dd>
        </div>
        <div>
          <dt>SI-SDR vs golden</dt>
          <dd>{db(sample.si_sdr_db_vs_golden)}</dd>
        </div>
        {sample.outline.clean ? (
          <div>
            <dt>SI-SDR vs clean (golden → compressed)</dt>
            <dd>
              {db(sample.si_sdr_db_golden)} → {db(sample.si_sdr_db_compressed)}
            </dd>
          </div>
        ) : null}
      </dl>
    </div>
  );
}
