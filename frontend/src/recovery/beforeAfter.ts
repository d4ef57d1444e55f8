// Before and after recovery, per held-out sample and per layer: pure functions over the summary's per_sample
// lists and the two layer profiles of GET /jobs/{id}/recovery/layers (BeforeAfter.tsx draws them).
import type { components } from "../client/schema";
import { layerLabel } from "../lib/layerNames";
import type { RecoverySummary } from "./recovery";

export type RecoveryLayers = components["schemas"]["RecoveryLayersOut"];
type Profile = RecoveryLayers["before"];

/** Where a KL of 0 (or rounding's −0) is drawn on the log axes; positive values are drawn as they are. */
export const KL_FLOOR = 1e-15;

export interface SampleChanges {
  n: number;
  /** Samples whose KL fell, rose (by more than 1e-12 relative), or stayed. */
  improved: number;
  worse: number;
  /** Top-1 disagreements with the golden model that recovery fixed, and agreements it broke. */
  fixed: number;
  broken: number;
  points: { index: number; before: number; after: number }[];
}

/** What recovery changed per held-out sample; samples with a non-finite KL on either side are left out. */
export function sampleChanges(summary: RecoverySummary): SampleChanges {
  const s = summary.per_sample;
  const out: SampleChanges = { n: 0, improved: 0, worse: 0, fixed: 0, broken: 0, points: [] };
  s.kl_before.forEach((before, i) => {
    const after = s.kl_after[i] ?? null;
    const was = s.top1_before[i];
    const now = s.top1_after[i];
    if (was === false && now === true) out.fixed += 1;
    if (was === true && now === false) out.broken += 1;
    if (before === null || after === null) return;
    out.n += 1;
    const scale = Math.max(Math.abs(before), Math.abs(after), 1e-300);
    if (after < before && (before - after) / scale > 1e-12) out.improved += 1;
    else if (after > before && (after - before) / scale > 1e-12) out.worse += 1;
    out.points.push({
      index: summary.heldout_index[i] ?? i,
      before: before > 0 ? before : KL_FLOOR,
      after: after > 0 ? after : KL_FLOOR,
    });
  });
  return out;
}

export interface LayerRow {
  name: string;
  before: number | null;
  after: number | null;
  /** +∞ dB (identical outputs) on either side. */
  infinite: boolean;
}

function sqnrByName(profile: Profile): Map<string, { value: number | null; infinite: boolean }> {
  return new Map(
    (profile.layers ?? []).map((l) => [
      layerLabel(l),
      { value: l.accumulated.sqnr_db ?? null, infinite: l.accumulated.sqnr_db_infinite },
    ]),
  );
}

/** Accumulated SQNR per golden layer, before and after, in the golden model's order (the "before" profile's,
 * then layers only the "after" one matched). */
export function layerRows(layers: RecoveryLayers): LayerRow[] {
  const before = sqnrByName(layers.before);
  const after = sqnrByName(layers.after);
  const names = [...new Set([...before.keys(), ...after.keys()])];
  return names.map((name) => {
    const b = before.get(name);
    const a = after.get(name);
    return {
      name,
      before: b?.value ?? null,
      after: a?.value ?? null,
      infinite: (b?.infinite ?? false) || (a?.infinite ?? false),
    };
  });
}

const MOVES_INNER_LAYERS = new Set(["equalization", "smoothquant", "distill", "qat"]);

/** Whether a method moves inner activations away from the golden ones by design: equalization and SmoothQuant
 * rescale channels (keeping the function, not the activations), distillation and QAT retrain every layer for
 * the outputs. Inner layers then differ from the golden ones however good the recovery. */
export function movesInnerLayers(summary: RecoverySummary): boolean {
  return summary.lineage.methods.some((m) => MOVES_INNER_LAYERS.has(m.name));
}
