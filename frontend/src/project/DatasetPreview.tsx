// A look at a dataset's first samples: thumbnails of image samples, per array its shape, dtype and values, and
// the prompts (and references) of a text dataset as written.
import { useState } from "react";
import { thumbnailHref, useDatasetSamples } from "../api/datasets";
import type { components } from "../client/schema";
import { Empty, QueryView } from "../components/QueryView";
import { formatNumber, formatShape } from "../lib/format";

type DatasetSample = components["schemas"]["DatasetSampleOut"];
type SampleArray = components["schemas"]["SampleArrayOut"];

export const PREVIEW_SAMPLES = 8;

/** "sample 3, label 7" (or "sample 3" without labels): the alt text of a thumbnail. */
export function sampleAlt(index: number, label: number | null | undefined): string {
  return label === null || label === undefined
    ? `sample ${index.toString()}`
    : `sample ${index.toString()}, label ${label.toString()}`;
}

function ArrayFacts({ name, array }: { name: string; array: SampleArray }) {
  return (
    <li>
      <code>{name}</code> {formatShape(array.shape)} <span className="muted">{array.dtype}</span>
      {array.min !== null && (
        <>
          <br />
          <span className="muted">range</span> {formatNumber(array.min)} – {formatNumber(array.max)}{" "}
          <span className="muted">mean</span> {formatNumber(array.mean)}
        </>
      )}
      {array.nonfinite > 0 && (
        <>
          {" "}
          <span className="badge badge-bad">{array.nonfinite.toLocaleString("en-US")} NaN/inf</span>
        </>
      )}
    </li>
  );
}

function Thumbnail({ datasetId, sample }: { datasetId: string; sample: DatasetSample }) {
  const [failed, setFailed] = useState(false);
  if (failed) return <p className="muted thumb-missing">No thumbnail</p>;
  const src = thumbnailHref(datasetId, sample.index);
  return (
    <a href={src} target="_blank" rel="noreferrer" className="thumb-link">
      <img
        className="thumb"
        src={src}
        alt={sampleAlt(sample.index, sample.label)}
        loading="lazy"
        onError={() => {
          setFailed(true);
        }}
      />
    </a>
  );
}

/** A text dataset's sample as written: a JSONL line's prompt and reference, or the start of a corpus. */
function SampleText({ text }: { text: Record<string, string> }) {
  return (
    <dl className="sample-text">
      {Object.entries(text).map(([name, value]) => (
        <div key={name}>
          <dt className="muted">{name}</dt>
          <dd>
            <q>{value}</q>
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function SampleCard({ datasetId, sample }: { datasetId: string; sample: DatasetSample }) {
  return (
    <li className="sample-card" data-sample={sample.index}>
      {sample.image && <Thumbnail datasetId={datasetId} sample={sample} />}
      <div>
        <strong>#{sample.index}</strong>
        {sample.label !== null && <span className="muted"> · label {sample.label}</span>}
        {sample.name && (
          <div className="muted sample-name" title={sample.name}>
            {sample.name}
          </div>
        )}
      </div>
      {sample.error && <p className="error">{sample.error}</p>}
      {sample.text && <SampleText text={sample.text} />}
      <ul className="plain sample-arrays">
        {Object.entries(sample.arrays).map(([name, array]) => (
          <ArrayFacts key={name} name={name} array={array} />
        ))}
      </ul>
    </li>
  );
}

export function DatasetPreview({ datasetId, id }: { datasetId: string; id?: string }) {
  const samples = useDatasetSamples(datasetId, 0, PREVIEW_SAMPLES);
  return (
    <div className="dataset-preview" id={id}>
      <QueryView query={samples} what="samples">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>This dataset has no samples to show.</Empty>
          ) : (
            <>
              <p className="muted">
                The first {page.items.length} of {page.total.toLocaleString("en-US")} samples
                {page.items.some((s) => s.image) ? "" : " (no array of these samples is an image)"}.
              </p>
              <ul className="plain sample-grid" aria-label="Samples">
                {page.items.map((s) => (
                  <SampleCard key={s.index} datasetId={datasetId} sample={s} />
                ))}
              </ul>
            </>
          )
        }
      </QueryView>
    </div>
  );
}
