// One worst sample of a robustness point: its corrupted input (as the models received it, drawn on the
// clean sample's value range so that a brightness or contrast change shows) beside the clean input (the
// sample inspector's picture), with both models' classes on each and the label (SamplePictures.tsx).
// For an .npz dataset both pictures come from the same array row on the same scale, so an unchanged row
// looks the same; for a zip of images the clean picture is the original file, the corrupted one the
// resized, normalised tensor the models received (worker/jobs/robustness_images.py).
import { isOffline } from "../offline/mode";
import { useSampleInspection } from "./inspectorQueries";
import { sliceLabel } from "./robustness";
import { SamplePictures } from "./SamplePictures";
import { cleanPictureUrl, corruptedPictureUrl, labelSentence, predictionText, type WorstSample } from "./worstSamples";

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
  const predicted = predictionText(sample.golden_class, sample.compressed_class);
  if (!sample.image || offline) {
    const why = offline
      ? "The corrupted inputs' pictures are not embedded in an exported report: open the report in Kneeboard to see them."
      : "No picture of the corrupted input: it is not an image, or the job ran before Kneeboard kept them (relaunch it).";
    const label = sample.label !== null ? `; label ${sample.label.toString()}` : "";
    return (
      <SamplePictures
        label="Corrupted input"
        heading={heading}
        pictures={null}
        note={`${why} On the corrupted input: ${predicted}${label}.`}
      />
    );
  }
  return (
    <SamplePictures
      label="Corrupted input"
      heading={heading}
      pictures={[
        {
          src: cleanPictureUrl(jobId, index),
          alt: `Clean input of sample ${index.toString()}`,
          caption: `Clean${clean ? `: ${predictionText(clean.golden_class, clean.compressed_class)}` : ""}`,
        },
        {
          src: corruptedPictureUrl(jobId, slice, severity, index),
          alt: `Corrupted input of sample ${index.toString()} (${sliceLabel(slice)}, ${severityName})`,
          caption: `${sliceLabel(slice)}, ${severityName}: ${predicted}`,
        },
      ]}
      note={`${labelSentence(sample.label)}The corrupted picture is drawn on the clean sample's value range (values outside it clipped), so brightness and contrast changes show. For an .npz dataset both pictures come from the same array, on the same scale; for a zip of images the clean picture is the original file, the corrupted one the resized, normalised input the models received.`}
    />
  );
}
