import type { Shape } from "plotly.js";
import { describe, expect, it } from "vitest";
import type { SensitivityReport } from "../api/types";
import { toCsv } from "./csv";
import { heatmapFigure, hoverGrid, matrixCsv, rowHeight } from "./sensitivityHeatmap";
import { REPORT, layer } from "./sensitivityFixtures";

describe("heatmap", () => {
  it("has a z row per layer and a column per configuration, hover text per cell", () => {
    const { data, layout, axis } = heatmapFigure(REPORT, null);
    const trace = data[0] as { type: string; z: (number | null)[][]; text: string[][]; x: string[]; y: number[] };
    expect(trace.type).toBe("heatmap");
    expect(trace.z).toHaveLength(3);
    expect(trace.z.every((row) => row.length === 4)).toBe(true);
    expect(trace.x).toEqual(REPORT.matrix.columns);
    expect(trace.y).toEqual([0, 1, 2]);
    expect(trace.z[2]?.[2]).toBeNull(); // fc × fp16 was not computed
    expect(axis.zeros).toBe(1);
    expect(layout.yaxis?.autorange).toBe("reversed");
    expect(layout.yaxis?.ticktext).toEqual(["conv1", "conv2", "fc"]);
    expect(layout.shapes).toEqual([]);
  });

  it("says what each cell is", () => {
    const hover = hoverGrid(REPORT);
    expect(hover[1]?.[1]).toBe(
      [
        "<b>conv2</b> (Conv)",
        "config: <b>w4-sym-tensor</b> — 4-bit weights, symmetric, per tensor",
        "KL mean: 0.00107 nats",
        "top-1 agreement: 99.00 %",
        "SQNR: 26.8 dB",
      ].join("<br>"),
    );
    expect(hover[0]?.[2]).toContain("SQNR: ∞ dB");
    expect(hoverGrid({ ...REPORT, mode: "all_but" })[0]?.[0]).toMatch(/^all but <b>conv1<\/b>/);
    const escaped = hoverGrid({
      ...REPORT,
      matrix: { ...REPORT.matrix, rows: ["a<b>", "conv2", "fc"] },
    });
    expect(escaped[0]?.[0]).toContain("<b>a&lt;b&gt;</b>");
  });

  it("labels each cell of a small heatmap with its number, none of a big one", () => {
    const labels = heatmapFigure(REPORT, null).layout.annotations ?? [];
    const at = (layer: number, config: string) => labels.find((a) => a.y === layer && a.x === config)?.text;
    const kl = REPORT.matrix.kl_mean;
    expect(at(1, "w4-sym-tensor")).toBe(Number((kl[1]?.[1] as number).toPrecision(2)).toString());
    expect(at(0, REPORT.matrix.columns[2] as string)).toBe("0"); // an exact cell
    expect(at(2, REPORT.matrix.columns[2] as string)).toBeUndefined(); // not computed: no number
    expect(labels).toHaveLength(3 * 4 - 1);
  });

  it("outlines the selected layer", () => {
    const shapes = heatmapFigure(REPORT, "conv2").layout.shapes as Partial<Shape>[];
    expect(shapes).toHaveLength(1);
    expect(shapes[0]).toMatchObject({ y0: 0.5, y1: 1.5, xref: "paper", x0: 0, x1: 1 });
    expect(heatmapFigure(REPORT, "nope").layout.shapes).toEqual([]);
  });

  it("stays one trace for 500 layers × 10 configurations, tall enough to read, with thinned labels", () => {
    const rows = Array.from({ length: 500 }, (_, i) => `blocks.${i.toString()}.mlp.fc`);
    const columns = Array.from({ length: 10 }, (_, j) => `cfg-${j.toString()}`);
    const grid = rows.map((_, i) => columns.map((__, j) => (i === 7 && j === 3 ? null : (i + 1) * (j + 1) * 1e-6)));
    const big: SensitivityReport = {
      ...REPORT,
      configs: columns.map((id) => ({ id, config: { type: "noise", bits: 4 }, weight_bits: 4 })),
      layers: rows.map((name, i) => layer(name, "Linear", i, rows.length)),
      matrix: { rows, columns, kl_mean: grid, top1_agreement: grid, sqnr_db: grid },
      ranking: { overall: [], by_config: {} },
      whole_model: {},
    };
    const started = performance.now();
    const figure = heatmapFigure(big, "blocks.250.mlp.fc");
    expect(performance.now() - started).toBeLessThan(1000);
    expect(figure.data).toHaveLength(1);
    const trace = figure.data[0] as { z: unknown[][]; text: string[][] };
    expect(trace.z).toHaveLength(500);
    expect(trace.text[499]).toHaveLength(10);
    expect(figure.layout.annotations).toEqual([]); // 5000 cells: numbers in the hover text only
    expect(figure.height).toBe(500 * rowHeight(500) + (figure.layout.margin?.t ?? 0) + (figure.layout.margin?.b ?? 0));
    expect((figure.layout.yaxis?.tickvals as number[]).length).toBe(250);
    expect(figure.axis.missing).toBe(1);
  });

  it("exports every cell as a CSV line", () => {
    const { header, rows } = matrixCsv(REPORT);
    expect(header).toEqual([
      "mode",
      "layer",
      "type",
      "depth_index",
      "depth_fraction",
      "config",
      "kl_mean",
      "top1_agreement",
      "sqnr_db",
    ]);
    expect(rows).toHaveLength(12);
    expect(rows[3]).toEqual(["only", "conv1", "Conv", 0, 0, "prune-u0.5", 0.0185, 0.99, 14.1]);
    expect(toCsv(header, rows).split("\r\n")[11]).toBe("only,fc,Gemm,2,1,fp16,,,");
  });
});
