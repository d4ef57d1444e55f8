// The per-sample table: sorted, filtered and paged by the server; its state lives in the page's URL.
import { thumbnailHref, useDatasetSamples } from "../api/datasets";
import { useSamples } from "../api/fidelity";
import type { Sample } from "../api/types";
import { Pager } from "../components/Pager";
import { SamplesCsvLink } from "../project/SamplesCsvLink";
import { Empty, ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber } from "../lib/format";
import { PAGE_SIZES, type SampleQuery, type SampleSort, type Tristate } from "../lib/route";
import { sampleAlt } from "../project/DatasetPreview";
import { SampleInspector } from "./SampleInspector";

const COLUMNS: { label: string; sort?: SampleSort; numeric?: boolean }[] = [
  { label: "Sample", sort: "sample_index", numeric: true },
  { label: "KL (nats)", sort: "kl", numeric: true },
  { label: "Cosine", sort: "cosine", numeric: true },
  { label: "MSE", sort: "mse", numeric: true },
  { label: "SQNR (dB)", numeric: true },
  { label: "Golden class", numeric: true },
  { label: "Compressed class", numeric: true },
  { label: "Label", numeric: true },
  { label: "Flagged" },
];

function SortHeader({
  column,
  query,
  onChange,
}: {
  column: (typeof COLUMNS)[number];
  query: SampleQuery;
  onChange: (q: Partial<SampleQuery>) => void;
}) {
  const { sort } = column;
  const className = column.numeric ? "num" : undefined;
  if (!sort) return <th className={className}>{column.label}</th>;
  const active = query.sort === sort;
  const next = active && query.order === "desc" ? "asc" : "desc";
  return (
    <th className={className} aria-sort={active ? (query.order === "asc" ? "ascending" : "descending") : "none"}>
      <button
        type="button"
        className="sort"
        onClick={() => {
          onChange({ sort, order: next, offset: 0 });
        }}
      >
        {column.label} {active ? (query.order === "asc" ? "▲" : "▼") : ""}
      </button>
    </th>
  );
}

function TristateSelect({
  label,
  value,
  onChange,
}: {
  label: string;
  value: Tristate;
  onChange: (v: Tristate) => void;
}) {
  return (
    <label className="inline">
      {label}
      <select
        value={value}
        onChange={(e) => {
          onChange(e.target.value as Tristate);
        }}
      >
        <option value="any">any</option>
        <option value="yes">yes</option>
        <option value="no">no</option>
      </select>
    </label>
  );
}

/** A small lazy-loaded picture of the sample, linking to its larger thumbnail. */
function SampleThumbnail({ datasetId, sample }: { datasetId: string; sample: Sample }) {
  const src = thumbnailHref(datasetId, sample.sample_index);
  return (
    <a
      href={src}
      target="_blank"
      rel="noreferrer"
      className="thumb-link"
      title="Open the larger thumbnail"
      onClick={(e) => {
        e.stopPropagation(); // open the picture, not select the row
      }}
    >
      <img
        className="thumb-small"
        src={src}
        alt={sampleAlt(sample.sample_index, sample.label)}
        loading="lazy"
        width={32}
        height={32}
      />
    </a>
  );
}

function Row({
  sample,
  selected,
  onSelect,
  imagesOf,
}: {
  sample: Sample;
  selected: boolean;
  onSelect: () => void;
  imagesOf: string | null;
}) {
  const flip = sample.top1_match === false;
  return (
    <tr
      className={`clickable${selected ? " selected" : ""}`}
      aria-selected={selected}
      onClick={onSelect}
      data-sample={sample.sample_index}
    >
      {imagesOf !== null && (
        <td>
          <SampleThumbnail datasetId={imagesOf} sample={sample} />
        </td>
      )}
      <td className="num">
        <button type="button" className="link" aria-pressed={selected}>
          #{sample.sample_index}
        </button>
      </td>
      <td className="num">{formatNumber(sample.kl)}</td>
      <td className="num">{formatNumber(sample.cosine, 6)}</td>
      <td className="num">{formatNumber(sample.mse)}</td>
      <td className="num">{sample.sqnr_db_infinite ? "∞" : formatNumber(sample.sqnr_db)}</td>
      <td className="num">{sample.golden_class ?? "—"}</td>
      <td className={`num${flip ? " flip" : ""}`}>{sample.compressed_class ?? "—"}</td>
      <td className="num">{sample.label ?? "—"}</td>
      <td>
        {sample.flagged ? <span className="badge badge-bad">flagged</span> : ""}
        {sample.finite ? "" : " non-finite"}
      </td>
    </tr>
  );
}

/** The dataset's id when its samples can be drawn (its first sample is an image), else null. */
function useImageDataset(datasetId: string | undefined): string | null {
  const first = useDatasetSamples(datasetId ?? "", 0, 1, datasetId !== undefined);
  return datasetId !== undefined && first.data?.items[0]?.image === true ? datasetId : null;
}

export function SamplesTable({
  jobId,
  output,
  query,
  onChange,
  datasetId,
  taskSamples = false,
}: {
  jobId: string;
  output: string;
  query: SampleQuery;
  onChange: (q: Partial<SampleQuery>) => void;
  /** The job's dataset: a thumbnail column appears when its samples are images. */
  datasetId?: string;
  /** The job kept its task's predictions (boxes, transcripts): the inspector shows them. */
  taskSamples?: boolean;
}) {
  const samples = useSamples(jobId, output, query);
  const imagesOf = useImageDataset(datasetId);
  return (
    <section className="panel" aria-labelledby="samples-heading">
      <div className="chart-head">
        <h2 id="samples-heading">Samples</h2>
        <div className="filters">
          <TristateSelect
            label="Flagged"
            value={query.flagged}
            onChange={(flagged) => {
              onChange({ flagged, offset: 0 });
            }}
          />
          <TristateSelect
            label="Top-1 flipped"
            value={query.flipped}
            onChange={(flipped) => {
              onChange({ flipped, offset: 0 });
            }}
          />
          <label className="inline">
            Rows
            <select
              value={query.limit}
              onChange={(e) => {
                onChange({ limit: Number(e.target.value), offset: 0 });
              }}
            >
              {PAGE_SIZES.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
          <SamplesCsvLink jobId={jobId} output={output} />
        </div>
      </div>
      {samples.isPending && <Loading what="samples" />}
      {samples.isError && <ErrorMessage error={samples.error} />}
      {samples.data &&
        (samples.data.total === 0 ? (
          <Empty>No sample matches these filters.</Empty>
        ) : (
          <>
            <table
              className={`table samples${samples.isPlaceholderData ? " stale" : ""}`}
              aria-labelledby="samples-heading"
            >
              <thead>
                <tr>
                  {imagesOf !== null && (
                    <th>
                      <span className="visually-hidden">Thumbnail</span>
                    </th>
                  )}
                  {COLUMNS.map((c) => (
                    <SortHeader key={c.label} column={c} query={query} onChange={onChange} />
                  ))}
                </tr>
              </thead>
              <tbody>
                {samples.data.items.map((s) => (
                  <Row
                    key={s.sample_index}
                    sample={s}
                    selected={s.sample_index === query.sample}
                    imagesOf={imagesOf}
                    onSelect={() => {
                      onChange({ sample: s.sample_index === query.sample ? null : s.sample_index });
                    }}
                  />
                ))}
              </tbody>
            </table>
            <Pager
              offset={query.offset}
              limit={query.limit}
              total={samples.data.total}
              onChange={(offset) => {
                onChange({ offset });
              }}
              label="Sample pages"
            />
          </>
        ))}
      {query.sample !== null && (
        <SampleInspector
          jobId={jobId}
          index={query.sample}
          taskSamples={taskSamples}
          onClose={() => {
            onChange({ sample: null });
          }}
        />
      )}
    </section>
  );
}
