// One worst sample of a robustness point: its corrupted input (as the models received it, drawn on the
// clean sample's value range so that a brightness or contrast change shows) beside the clean input (the
// sample inspector's picture), with both models' classes on each and the label.
import { isOffline } from "../offline/mode";
import { useSampleInspection } from "./inspectorQueries";
import { sliceLabel } from "./robustness";
import { cleanPictureUrl, corruptedPictureUrl, predictionText, type WorstSample } from "./worstSamples";
import "./inspector.css";
import "./corruptedSample.css";

export function CorruptedSample({
  jobId,
  slice,
  severity,
  severityName,
  sample,
}: {
  jobId: string;
  slice: string;
  severity: number;
  severityName: string;
  sample: WorstSample;
}) {
  const index = sample.sample_index;
  const offline = isOffline();
  const inspection = useSampleInspection(jobId, sample.image && !offline ? index : null);
  const clean = inspection.data?.metrics ?? null;
  const heading = `Sample #${index.toString()} under ${sliceLabel(slice)} (${severityName})`;
  if (!sample.image || offline) {
    return (
      <div className="inspector" aria-label="Corrupted input">
        <h4>{heading}</h4>
        <p className="muted">
          {offline
            ? "The corrupted inputs' pictures are not embedded in an exported report: open the report in Kneeboard to see them."
            : "No picture of the corrupted input: it is not an image, or the job ran before Kneeboard kept them (relaunch it)."}{" "}
          On the corrupted input: {predictionText(sample.golden_class, sample.compressed_class)}
          {sample.label !== null ? `; label ${sample.label.toString()}` : ""}.
        </p>
      </div>
    );
  }
  return (
    <div className="inspector" aria-label="Corrupted input">
      <h4>{heading}</h4>
      <div className="inspector-input corrupted-pair">
        <figure>
          <img
            src={cleanPictureUrl(jobId, index)}
            alt={`Clean input of sample ${index.toString()}`}
            width={192}
            height={192}
          />
          <figcaption>
            Clean
            {clean ? `: ${predictionText(clean.golden_class, clean.compressed_class)}` : ""}
          </figcaption>
        </figure>
        <figure>
          <img
            src={corruptedPictureUrl(jobId, slice, severity, index)}
            alt={`Corrupted input of sample ${index.toString()} (${sliceLabel(slice)}, ${severityName})`}
            width={192}
            height={192}
          />
          <figcaption>
            {sliceLabel(slice)}, {severityName}: {predictionText(sample.golden_class, sample.compressed_class)}
          </figcaption>
        </figure>
      </div>
      <p className="small-text muted">
        {sample.label !== null ? `Label ${sample.label.toString()}. ` : ""}The corrupted picture is drawn on the clean
        sample&apos;s value range (values outside it clipped), so brightness and contrast changes show.
      </p>
    </div>
  );
}
