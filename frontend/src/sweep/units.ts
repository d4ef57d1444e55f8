// Units a person types bounds in: the ones the chart and tables print.

/** The unit the chart prints sizes in (formatBytes's, for the largest point): the size bound is typed in it. */
export function bytesUnit(values: readonly (number | null)[]): { name: string; bytes: number } {
  const largest = Math.max(0, ...values.filter((v): v is number => v !== null && Number.isFinite(v)));
  const names = ["bytes", "KiB", "MiB", "GiB"];
  let k = 0;
  while (k < names.length - 1 && largest >= 1024 ** (k + 1)) k += 1;
  return { name: names[k] ?? "bytes", bytes: 1024 ** k };
}
