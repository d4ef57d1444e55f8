// A table's header row: the column names (numeric ones right-aligned, class "num") and, where rows have
// buttons, a last column whose name only screen readers hear.
export interface Column {
  label: string;
  /** Right-aligned, like the numbers under it. */
  numeric?: boolean;
}

export function TableHead({ columns, actions = false }: { columns: readonly (string | Column)[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {columns.map((column) => {
          const { label, numeric = false } = typeof column === "string" ? { label: column } : column;
          return (
            <th key={label} className={numeric ? "num" : undefined}>
              {label}
            </th>
          );
        })}
        {actions && (
          <th>
            <span className="visually-hidden">Actions</span>
          </th>
        )}
      </tr>
    </thead>
  );
}
