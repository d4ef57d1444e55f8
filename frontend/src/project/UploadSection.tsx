// What the models and datasets sections share: a heading, the project's items in a table (or why there are
// none), and beside it the upload form for those who may upload.
import type { UseQueryResult } from "@tanstack/react-query";
import { Fragment, type ReactNode } from "react";
import { Empty, QueryView } from "../components/QueryView";
import { TableHead, type Column } from "../components/TableHead";

export function UploadSection<T extends { id: string }>({
  name,
  title,
  query,
  empty,
  columns,
  actions,
  row,
  upload,
}: {
  /** What the items are, plural ("models"): the heading's id is `${name}-heading`. */
  name: string;
  title: string;
  query: UseQueryResult<T[]>;
  /** Said when there are no items yet. */
  empty: string;
  columns: readonly (string | Column)[];
  /** Whether the rows end with a column of buttons. */
  actions: boolean;
  row: (item: T) => ReactNode;
  /** The upload form, or nothing for those who may not upload. */
  upload: ReactNode;
}) {
  const heading = `${name}-heading`;
  return (
    <section aria-labelledby={heading}>
      <h2 id={heading}>{title}</h2>
      <div className="split">
        <QueryView query={query} what={name}>
          {(items) =>
            items.length === 0 ? (
              <Empty>{empty}</Empty>
            ) : (
              <table className="table" aria-labelledby={heading}>
                <TableHead columns={columns} actions={actions} />
                <tbody>
                  {items.map((item) => (
                    <Fragment key={item.id}>{row(item)}</Fragment>
                  ))}
                </tbody>
              </table>
            )
          }
        </QueryView>
        {upload}
      </div>
    </section>
  );
}
