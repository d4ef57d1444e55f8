// Screening (issue 31): which cells of a sensitivity report were measured and which estimated.
import type { SensitivityReport } from "../api/types";

/** Whether a layer's cells were all measured exactly: for one configuration, or every one (overall). Reports
 * made before screening have no `exact` grid: every cell was measured. */
export function layerIsExact(report: SensitivityReport, layer: string, config: string | null): boolean {
  const grid = report.matrix.exact;
  if (!grid) return true;
  const row = report.matrix.rows.indexOf(layer);
  if (row < 0) return true;
  const flags = grid[row] ?? [];
  if (config === null) return flags.every(Boolean);
  const column = report.matrix.columns.indexOf(config);
  return column < 0 || (flags[column] ?? true);
}

/** "14 of 82 cells measured exactly (top 4 by estimate, 3 random controls; Spearman ρ 0.93 on them)", or
 * null for a scan that measured every cell. */
export function screeningSummary(report: SensitivityReport): string | null {
  const s = report.screening;
  if (!s) return null;
  const rho = s.spearman == null ? "" : `; Spearman ρ of estimate vs exact on them ${s.spearman.toFixed(2)}`;
  return (
    `${s.exact_cells.toLocaleString("en-US")} of ${s.total_cells.toLocaleString("en-US")} cells measured exactly ` +
    `(top ${s.top_layers.length.toString()} layers by estimate, ${s.control_layers.length.toString()} random controls${rho}); ` +
    "the others are estimated"
  );
}
