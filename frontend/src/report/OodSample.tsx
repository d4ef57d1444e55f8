// One worst sample of the out-of-distribution dataset: the row of that dataset as stored (the models ran on
// it unchanged, so its picture is the dataset preview's thumbnail), with both models' classes and the label
// (SamplePictures.tsx); a dataset whose samples are not images, or an exported report, gets a note instead.
import { useDatasetSamples } from "../api/datasets";
import { isOffline } from "../offline/mode";
import { SamplePictures } from "./SamplePictures";
import { labelSentence, oodPicture, predictionText, type WorstSample } from "./worstSamples";

export function OodSample({
  datasetId,
  datasetName,
  sample,
}: {
  datasetId: string;
  datasetName: string;
  sample: WorstSample;
}) {
  const index = sample.sample_index;
  const offline = isOffline();
  // Whether this row can be drawn (an image, or an image-like .npz array) before asking for its picture.
  const preview = useDatasetSamples(datasetId, index, 1, !offline);
  const picture = oodPicture(
    datasetId,
    index,
    offline,
    preview.isSuccess ? (preview.data.items[0] ?? null) : undefined,
    preview.isError ? preview.error.message : null,
  );
  const heading = `Row #${index.toString()} of ${datasetName}`;
  const predicted = predictionText(sample.golden_class, sample.compressed_class);
  if (picture.kind === "none") {
    const label = sample.label !== null ? `; label ${sample.label.toString()}` : "";
    return (
      <SamplePictures
        label="Out-of-distribution sample"
        heading={heading}
        pictures={null}
        note={`${picture.why} The models: ${predicted}${label}.`}
        busy={picture.loading}
      />
    );
  }
  return (
    <SamplePictures
      label="Out-of-distribution sample"
      heading={heading}
      pictures={[
        {
          src: picture.src,
          alt: `Out-of-distribution sample ${index.toString()} of ${datasetName}`,
          caption: predicted,
        },
      ]}
      note={`${labelSentence(sample.label)}The row as stored in ${datasetName} (the models ran on it unchanged).`}
    />
  );
}
