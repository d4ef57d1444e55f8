// The per-sample table: sorted, filtered and paged by the server; its state lives in the page's URL. A task
// job's table leads with the rows' task values (sortable by the server too) and drops the columns its outputs
// leave empty (sampleColumns.ts).
import { useMemo } from "react";
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
import { hiddenColumns, taskColumns, type OptionalColumn } from "./sampleColumns";

interface Column {
  label: string;
  sort?: SampleSort;
  /** A per-sample task value (sorted through `task_metric`). */
  task?: string;
  numeric?: boolean;
  optional?: OptionalColumn;
}

const COLUMNS: Column[] = [
  { label: "Sample", sort: "sample_index", numeric: true },
  { label: "KL (nats)", sort: "kl", numeric: true, optional: "kl" },
  { label: "Cosine", sort: "cosine", numeric: true },
  { label: "MSE", sort: "mse", numeric: true },
  { label: "SQNR (dB)", numeric: true },
  { label: "Golden class", numeric: true, optional: "golden_class" },
  { label: "Compressed class", numeric: true, optional: "compressed_class" },
  { label: "Label", numeric: true, optional: "label" },
  { label: "Flagged" },
];

function SortHeader({
  column,
  query,
  onChange,
}: {
  column: Column;
  query: SampleQuery;
  onChange: (q: Partial<SampleQuery>) => void;
}) {
  const { sort, task } = column;
  const className = column.numeric ? "num" : undefined;
  if (!sort && !task) return <th className={className}>{column.label}</th>;
  const active = task ? query.task_metric === task : query.task_metric === null && query.sort === sort;
  const next = active && query.order === "desc" ? "asc" : "desc";
  return (
    <th className={className} aria-sort={active ? (query.order === "asc" ? "ascending" : "descending") : "none"}>
      <button
        type="button"
        className="sort"
        onClick={() => {
          onChange(
            task ? { task_metric: task, order: next, offset: 0 } : { sort, task_metric: null, order: next, offset: 0 },
          );
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
  tasks,
  hidden,
}: {
  sample: Sample;
  selected: boolean;
  onSelect: () => void;
  imagesOf: string | null;
  tasks: readonly string[];
  hidden: ReadonlySet<OptionalColumn>;
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
      {tasks.map((t) => (
        <td key={t} className="num">
          {formatNumber(sample.task_values?.[t] ?? null)}
        </td>
      ))}
      {!hidden.has("kl") && <td className="num">{formatNumber(sample.kl)}</td>}
      <td className="num">{formatNumber(sample.cosine, 6)}</td>
      <td className="num">{formatNumber(sample.mse)}</td>
      <td className="num">{sample.sqnr_db_infinite ? "∞" : formatNumber(sample.sqnr_db)}</td>
      {!hidden.has("golden_class") && <td className="num">{sample.golden_class ?? "—"}</td>}
      {!hidden.has("compressed_class") && (
        <td className={`num${flip ? " flip" : ""}`}>{sample.compressed_class ?? "—"}</td>
      )}
      {!hidden.has("label") && <td className="num">{sample.label ?? "—"}</td>}
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
  const items = samples.data?.items;
  const tasks = useMemo(() => taskColumns(items ?? []), [items]);
  const hidden = useMemo(() => hiddenColumns(items ?? []), [items]);
  const columns = useMemo(() => {
    const [first, ...rest] = COLUMNS.filter((c) => !c.optional || !hidden.has(c.optional));
    const taskCols: Column[] = tasks.map((t) => ({ label: t, task: t, numeric: true }));
    return first ? [first, ...taskCols, ...rest] : taskCols;
  }, [tasks, hidden]);
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
                  {columns.map((c) => (
                    <SortHeader key={c.task ?? c.label} column={c} query={query} onChange={onChange} />
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
                    tasks={tasks}
                    hidden={hidden}
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
