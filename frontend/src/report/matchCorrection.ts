// Correcting a fidelity job's layer matching: the pairing the profile found, the user's edits on top of it,
// and the `layer_name_map` (golden name → compressed name) a re-run needs to pair the layers as edited.
// Pure functions; MatchCorrection.tsx draws them.
import type { LayerProfile } from "../api/types";

/** The name-map value that leaves a golden layer unmatched: the engine pairs a mapped golden layer only with
 * a compressed layer of that name, so "" pairs it with nothing and keeps name and structure matching off it. */
export const UNMATCHED = "";

export interface MatchRow {
  /** The golden layer's name as the profile and the name map use it (a tensor name for ONNX). */
  golden: string;
  /** What the dashboard calls it: its canonical id, else its name. */
  label: string;
  /** Every name of the golden layer: canonical id (the layer, as the graph view finds it), name, aliases (a
   * name map may use any of them). */
  goldenIds: string[];
  opType: string;
  compressed: string | null;
  /** name_map, name, structure, weights; "edited" for a pending correction; null when unmatched. */
  method: string | null;
  confidence: number | null;
}

/** golden name → its compressed layer, or null to leave it unmatched. */
export type Edits = ReadonlyMap<string, string | null>;

/** The profile's pairing: its matched layers in depth order, then the golden layers it left unmatched. */
export function profileRows(profile: LayerProfile): MatchRow[] {
  const rows: MatchRow[] = (profile.layers ?? []).map((l) => ({
    golden: l.name,
    label: l.canonical_id ?? l.name,
    goldenIds: [...new Set([...(l.canonical_id ? [l.canonical_id] : []), l.name, ...(l.aliases ?? [])])],
    opType: l.op_type,
    compressed: l.compressed_name,
    method: l.match_method ?? null,
    confidence: l.match_confidence ?? null,
  }));
  const seen = new Set(rows.map((r) => r.golden));
  for (const name of profile.unmatched_golden ?? []) {
    if (seen.has(name)) continue;
    seen.add(name);
    rows.push({
      golden: name,
      label: name,
      goldenIds: [name],
      opType: "",
      compressed: null,
      method: null,
      confidence: null,
    });
  }
  return rows;
}

/** Every compressed layer a golden one may be paired with: the matched ones, then the unmatched ones. */
export function compressedChoices(profile: LayerProfile): string[] {
  const names = (profile.layers ?? []).map((l) => l.compressed_name);
  return [...new Set([...names, ...(profile.unmatched_compressed ?? [])])];
}

/** Edits that change nothing (back to the profile's own pairing) are not edits. */
export function effectiveEdits(rows: MatchRow[], edits: Edits): Map<string, string | null> {
  const original = new Map(rows.map((r) => [r.golden, r.compressed]));
  const out = new Map<string, string | null>();
  for (const [golden, compressed] of edits) {
    if (!original.has(golden)) continue;
    if ((original.get(golden) ?? null) !== compressed) out.set(golden, compressed);
  }
  return out;
}

/** The pairing once the edits apply: edited rows carry method "edited" and no confidence. */
export function applyEdits(rows: MatchRow[], edits: Edits): MatchRow[] {
  const changed = effectiveEdits(rows, edits);
  return rows.map((row) => {
    if (!changed.has(row.golden)) return row;
    const compressed = changed.get(row.golden) ?? null;
    return { ...row, compressed, method: compressed === null ? null : "edited", confidence: null };
  });
}

/** Compressed layers that more than one golden layer is paired with → those golden layers. */
export function conflicts(rows: MatchRow[]): Map<string, string[]> {
  const users = new Map<string, string[]>();
  for (const row of rows) {
    if (row.compressed === null) continue;
    users.set(row.compressed, [...(users.get(row.compressed) ?? []), row.golden]);
  }
  return new Map([...users].filter(([, golden]) => golden.length > 1));
}

/** Compressed layers no golden layer is paired with in `rows`. */
export function unusedCompressed(rows: MatchRow[], choices: string[]): string[] {
  const used = new Set(rows.map((r) => r.compressed).filter((c): c is string => c !== null));
  return choices.filter((c) => !used.has(c));
}

/** Why the edits cannot be launched yet; empty when they can. */
export function validateEdits(rows: MatchRow[], choices: string[], edits: Edits): string[] {
  const errors: string[] = [];
  const changed = effectiveEdits(rows, edits);
  if (changed.size === 0) errors.push("No change to the matching yet.");
  const known = new Set(choices);
  for (const [golden, compressed] of changed) {
    if (compressed !== null && !known.has(compressed))
      errors.push(`The compressed model has no layer ${compressed} (for ${golden}).`);
  }
  for (const [compressed, golden] of conflicts(applyEdits(rows, edits)))
    errors.push(
      `${compressed} is paired with ${golden.length.toString()} golden layers (${golden.join(", ")}): pick one.`,
    );
  return errors;
}

/** The job's name map with the edits applied: an edited golden layer's entry replaces any entry naming it by
 * another of its names (an alias), so the engine sees one entry per layer; other entries stay as they were. */
export function buildNameMap(existing: Record<string, string>, rows: MatchRow[], edits: Edits): Record<string, string> {
  const changed = effectiveEdits(rows, edits);
  const idsOf = new Map(rows.map((r) => [r.golden, new Set(r.goldenIds)]));
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(existing)) {
    const replaced = [...changed.keys()].some((golden) => idsOf.get(golden)?.has(key));
    if (!replaced) out[key] = value;
  }
  for (const [golden, compressed] of changed) out[golden] = compressed ?? UNMATCHED;
  return out;
}

/** The job's current name map, from its parameters (an absent or malformed one is empty). */
export function nameMapOf(params: Record<string, unknown>): Record<string, string> {
  const raw = params["layer_name_map"];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return {};
  return Object.fromEntries(
    Object.entries(raw as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === "string"),
  );
}

/** A row needs a look when it was matched by structure or weights under `threshold`, or not matched. */
export function needsReview(row: MatchRow, threshold = 0.8): boolean {
  if (row.compressed === null) return true;
  if (row.method === "structure" || row.method === "weights") return (row.confidence ?? 0) < threshold;
  return false;
}

export type RowFilter = "all" | "review" | "edited";

export function filterRows(
  rows: MatchRow[],
  edited: ReadonlySet<string>,
  filter: RowFilter,
  query: string,
): MatchRow[] {
  const q = query.trim().toLowerCase();
  return rows.filter((row) => {
    if (filter === "review" && !needsReview(row)) return false;
    if (filter === "edited" && !edited.has(row.golden)) return false;
    if (q === "") return true;
    return [...row.goldenIds, row.compressed ?? ""].some((n) => n.toLowerCase().includes(q));
  });
}
