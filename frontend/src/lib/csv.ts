// CSV text (RFC 4180) for the "CSV" buttons next to charts and tables.

export type Cell = string | number | boolean | null | undefined;

/** A text that a spreadsheet would run as a formula (= + - @, or a tab or CR before one) gets a quote in
 * front, which it shows as text (as the API's CSVs do: backend/api/csv_text.py). Numbers stay numbers. */
function unformula(value: Cell): string {
  if (value === null || value === undefined) return "";
  const text = String(value);
  return typeof value === "string" && /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

function cell(value: Cell): string {
  const text = unformula(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  return [header, ...rows].map((row) => row.map(cell).join(",")).join("\r\n") + "\r\n";
}

/** A file name made of safe characters: "KL histogram / job 1" → "kl-histogram-job-1". */
export function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+|-+$/g, "") || "data"
  );
}
