// Number, size and time formatting for tables and cards. Every function accepts null/undefined and
// returns "—" for a missing or non-finite value, so callers can pass API fields straight through.

const MISSING = "—";

function finite(value: number | null | undefined): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/** 4 significant digits; scientific notation for very small or very large magnitudes. */
export function formatNumber(value: number | null | undefined, digits = 4): string {
  if (!finite(value)) return MISSING;
  if (value === 0) return "0";
  if (Number.isInteger(value) && Math.abs(value) < 1e6) return value.toLocaleString("en-US");
  const magnitude = Math.abs(value);
  // Scientific notation without trailing zeros in the mantissa: 5e-4, 1.055e-4.
  if (magnitude < 1e-3 || magnitude >= 1e6) return value.toExponential(digits - 1).replace(/\.?0+e/, "e");
  return Number(value.toPrecision(digits)).toString();
}

/** A fraction 0..1 as a percentage: 0.98765 → "98.77 %". */
export function formatPercent(fraction: number | null | undefined, decimals = 2): string {
  return finite(fraction) ? `${(fraction * 100).toFixed(decimals)} %` : MISSING;
}

/** Counts such as parameters and MACs: 25600 → "25.6 k", 3.2e9 → "3.2 G". */
export function formatCount(value: number | null | undefined): string {
  if (!finite(value)) return MISSING;
  const units: [number, string][] = [
    [1e12, "T"],
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ];
  for (const [size, unit] of units) {
    if (Math.abs(value) >= size) return `${Number((value / size).toPrecision(3)).toString()} ${unit}`;
  }
  return value.toString();
}

export function formatBytes(value: number | null | undefined): string {
  if (!finite(value)) return MISSING;
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = value;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${size.toString()} B` : `${size.toFixed(1)} ${units[unit] ?? ""}`;
}

export function formatDuration(seconds: number | null | undefined): string {
  if (!finite(seconds)) return MISSING;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60).toString()} min ${Math.round(seconds % 60).toString()} s`;
  return `${Math.floor(seconds / 3600).toString()} h ${Math.round((seconds % 3600) / 60).toString()} min`;
}

/** An ISO timestamp in the viewer's local time, minutes precision: "2026-12-02 17:53". */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return MISSING;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return MISSING;
  const pad = (n: number) => n.toString().padStart(2, "0");
  return (
    `${date.getFullYear().toString()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}`
  );
}

/** A day typed as the dashboard writes dates ("2026-12-07", ISO: the same in every locale, unlike a date
 * input's mm/dd/yyyy): the day, "" when blank, null when it is not a real day (2026-02-30, 12/07/2026). */
export function parseDay(text: string): string | null {
  const day = text.trim();
  if (day === "") return "";
  const match = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(day);
  if (!match) return null;
  const [year, month, date] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const check = new Date(Date.UTC(year, month - 1, date));
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== date) return null;
  return check.toISOString().slice(0, 10);
}

/** A tensor shape with symbolic dimensions: ["batch", 1, 8, 8] → "batch × 1 × 8 × 8". */
export function formatShape(shape: readonly (number | string | null)[]): string {
  return shape.length === 0 ? "scalar" : shape.map((d) => (d === null ? "?" : d.toString())).join(" × ");
}
