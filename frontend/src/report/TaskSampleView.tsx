// One sample's task predictions inside the sample inspector (issue 30): a detector's boxes of both models and
// the truth drawn over the input picture (each set can be hidden), a speech model's transcripts with the
// compressed model's word differences from the golden one marked, or (TaskMediaViews.tsx) a segmenter's
// label maps, an image output's pictures and a signal's waveforms.
import { useState } from "react";
import { Checkbox } from "../components/Checkbox";
import { ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber } from "../lib/format";
import { type TaskSample, useTaskSample } from "./inspectorQueries";
import { ImageOutputs, SegmentationMasks, SignalPlayback } from "./TaskMediaViews";
import { changedWords, svgBox, wordDiff } from "./taskSample";

type Detection = Extract<TaskSample, { task: "detection" }>;
type Ctc = Extract<TaskSample, { task: "ctc" }>;
type Role = "truth" | "golden" | "compressed";

const STYLE: Record<Role, { stroke: string; dash?: string; label: string }> = {
  truth: { stroke: "#2ca02c", label: "truth" },
  golden: { stroke: "#1f77b4", dash: "4 3", label: "golden" },
  compressed: { stroke: "#d62728", label: "compressed" },
};

function Boxes({ sample }: { sample: Detection }) {
  const [shown, setShown] = useState<Record<Role, boolean>>({ truth: true, golden: true, compressed: true });
  const size = sample.image_size;
  const roles: Role[] = sample.truth ? ["truth", "golden", "compressed"] : ["golden", "compressed"];
  const boxesOf = (role: Role) => (role === "truth" ? (sample.truth ?? []) : sample[role]);
  return (
    <div className="task-sample">
      {size && sample.picture ? (
        <div className="box-overlay" data-testid="box-overlay">
          <img
            src={sample.picture}
            alt={`Input of sample ${sample.index.toString()}`}
            width={320}
            height={Math.round((320 * (size[0] ?? 1)) / (size[1] ?? 1))}
          />
          <svg viewBox={`0 0 ${(size[1] ?? 1).toString()} ${(size[0] ?? 1).toString()}`} preserveAspectRatio="none">
            {roles
              .filter((r) => shown[r])
              .flatMap((role) =>
                boxesOf(role).map((b, i) => {
                  const r = svgBox(b.box, size);
                  if (!r) return null;
                  const s = STYLE[role];
                  return (
                    <rect
                      key={`${role}-${i.toString()}`}
                      data-role={role}
                      {...r}
                      fill="none"
                      stroke={s.stroke}
                      strokeDasharray={s.dash}
                      vectorEffect="non-scaling-stroke"
                      strokeWidth={2}
                    >
                      <title>
                        {s.label} · class {b.label}
                        {b.score != null ? ` · score ${formatNumber(b.score, 3)}` : ""}
                      </title>
                    </rect>
                  );
                }),
              )}
          </svg>
        </div>
      ) : (
        <p className="muted">
          {size
            ? "The sample's picture is not available here, so the boxes are not drawn."
            : "The job could not tell the image size, so the boxes are not drawn."}
        </p>
      )}
      <div className="box-legend">
        {roles.map((role) => (
          <Checkbox
            key={role}
            checked={shown[role]}
            onChange={(checked) => {
              setShown({ ...shown, [role]: checked });
            }}
          >
            <span style={{ color: STYLE[role].stroke }}>■</span> {STYLE[role].label} ({boxesOf(role).length})
          </Checkbox>
        ))}
      </div>
    </div>
  );
}

function Transcripts({ sample }: { sample: Ctc }) {
  const parts = wordDiff(sample.golden, sample.compressed);
  return (
    <dl className="facts transcripts">
      {sample.reference !== null && (
        <div>
          <dt>Reference</dt>
          <dd>{sample.reference}</dd>
        </div>
      )}
      <div>
        <dt>Golden</dt>
        <dd>{sample.golden || <span className="muted">(nothing)</span>}</dd>
      </div>
      <div>
        <dt>Compressed ({changedWords(sample.golden, sample.compressed)} words differ)</dt>
        <dd data-testid="transcript-diff">
          {parts.map((p, i) =>
            p.op === "same" ? (
              <span key={i}>{p.text} </span>
            ) : p.op === "removed" ? (
              <del key={i} title="the golden model's words the compressed one lost">
                {p.text}
              </del>
            ) : (
              <ins key={i} title="words only the compressed model wrote">
                {p.text}
              </ins>
            ),
          )}
        </dd>
      </div>
    </dl>
  );
}

const HEADING: Record<TaskSample["task"], string> = {
  detection: "Boxes",
  ctc: "Transcripts",
  segmentation: "Label maps",
  image: "Output pictures",
  signal: "Waveforms",
};

/** The task predictions of the inspected sample (nothing for a task that keeps none). */
export function TaskSampleView({ jobId, index }: { jobId: string; index: number }) {
  const sample = useTaskSample(jobId, index, true);
  if (sample.isPending) return <Loading what="the task predictions" />;
  if (sample.isError) return <ErrorMessage error={sample.error} />;
  const data = sample.data;
  return (
    <section aria-label="Task predictions" className="task-predictions">
      <h4>{HEADING[data.task]}</h4>
      {data.task === "detection" ? (
        <Boxes sample={data} />
      ) : data.task === "ctc" ? (
        <Transcripts sample={data} />
      ) : data.task === "segmentation" ? (
        <SegmentationMasks sample={data} />
      ) : data.task === "image" ? (
        <ImageOutputs sample={data} />
      ) : (
        <SignalPlayback sample={data} />
      )}
    </section>
  );
}
