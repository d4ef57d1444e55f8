import type { ReactNode } from "react";
import { slug, toCsv, type Cell } from "../lib/csv";
import { downloadText } from "../lib/download";

export interface CsvData {
  header: string[];
  rows: Cell[][];
}

/** A titled chart with its caption and a button that downloads the chart's data as CSV. */
export function ChartPanel({
  title,
  caption,
  csv,
  children,
}: {
  title: string;
  caption?: ReactNode;
  csv: () => CsvData;
  children: ReactNode;
}) {
  const download = () => {
    const { header, rows } = csv();
    downloadText(`${slug(title)}.csv`, toCsv(header, rows));
  };
  return (
    <figure className="chart panel">
      <div className="chart-head">
        <h3>{title}</h3>
        <button type="button" className="small" onClick={download} aria-label={`Download the data of ${title} as CSV`}>
          CSV
        </button>
      </div>
      {children}
      {caption && <figcaption>{caption}</figcaption>}
    </figure>
  );
}
