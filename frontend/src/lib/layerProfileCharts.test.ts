import type { ScatterData } from "plotly.js";
import { describe, expect, it } from "vitest";
import type { LayerProfile } from "../api/types";
import { infinityCap } from "./layerProfileAxes";
import { cosineFigure, hoverText, sqnrFigure } from "./layerProfileCharts";
import { LAYERS, layer, PROFILE, stats } from "./layerProfileFixtures";

const scatter = (d: unknown) => d as Partial<ScatterData>;

describe("sqnrFigure", () => {
  const { data, layout } = sqnrFigure(PROFILE);
  const [accumulated, local] = data.map(scatter);

  it("draws one scatter trace per kind over the depths, then the infinite values and the worst layer", () => {
    expect(data.map((d) => scatter(d).name)).toEqual([
      "accumulated",
      "local",
      "+∞ (identical outputs)",
      "adds the most error",
    ]);
    expect(accumulated?.x).toEqual([0, 1, 2, 3, 4]);
    expect(local?.x).toEqual([0, 1, 2, 3, 4]);
    expect(accumulated?.connectgaps).toBe(false);
  });

  it("draws infinite values at the cap, ringed by a third trace, and missing values as gaps", () => {
    const cap = infinityCap(LAYERS);
    expect(accumulated?.y).toEqual([cap, 45.3, 42.1, null, 40]);
    expect(local?.y).toEqual([cap, 30.2, null, 44, 41.5]);
    const infinite = scatter(data[2]);
    expect(infinite.name).toContain("∞");
    expect(infinite.x).toEqual([0, 0]);
    expect(infinite.y).toEqual([cap, cap]);
    expect(infinite.marker?.symbol).toBe("triangle-up-open");
    expect(layout.shapes?.some((s) => s.type === "line" && s.y0 === cap)).toBe(true);
    expect(layout.yaxis?.ticktext?.at(-1)).toBe("∞");
  });

  it("rings the worst layer and describes each layer in the hover", () => {
    const ring = scatter(data[3]);
    expect(ring.x).toEqual([1]);
    expect(ring.y).toEqual([30.2]);
    expect(layout.shapes?.some((s) => s.type === "rect" && s.x0 === 0.6 && s.x1 === 1.4)).toBe(true);
    const hover = (accumulated?.hovertext as string[])[0] ?? "";
    expect(hover).toContain("layer_0_DequantizeLinear_Output");
    expect(hover).toContain("SQNR: accumulated ∞ dB, local ∞ dB");
  });

  it("labels the x axis with layer names for small models", () => {
    expect(layout.xaxis?.ticktext).toEqual(LAYERS.map((l) => l.name));
  });

  it("has no infinity trace, line or tick when nothing is infinite", () => {
    const finite = sqnrFigure({ ...PROFILE, layers: LAYERS.slice(1) });
    expect(finite.data.map((d) => scatter(d).name)).toEqual(["accumulated", "local", "adds the most error"]);
    expect(finite.layout.shapes?.filter((s) => s.type === "line")).toEqual([]);
    expect(finite.layout.yaxis?.tickvals).toBeUndefined();
  });

  it("draws empty traces for a profile without layers", () => {
    const empty = sqnrFigure({ ...PROFILE, layers: [] });
    expect(empty.data.map((d) => scatter(d).x)).toEqual([[], []]);
    expect(empty.data).toHaveLength(2);
    expect(empty.layout.shapes).toEqual([]);
  });
});

describe("cosineFigure", () => {
  it("plots the cosine mean with gaps for missing values", () => {
    const { data, layout } = cosineFigure(PROFILE);
    expect(data.map((d) => scatter(d).y)).toEqual([
      [1, 0.9999, 0.9999, null, 0.9999],
      [1, 0.9999, null, 0.9999, 0.9999],
      [0.9999],
    ]);
    expect(layout.shapes).toHaveLength(1);
  });
});

describe("hoverText", () => {
  it("escapes markup in names and includes the local note", () => {
    const text = hoverText(layer(2, stats(1), null, { name: "a<b>", local_note: "no local" }), 5);
    expect(text).toContain("a&lt;b&gt;");
    expect(text).toContain("depth 2 of 4 (0.5)");
    expect(text).toContain("local —");
    expect(text).toContain("note: no local");
  });
});

describe("the own quantizer's error (qdq_err)", () => {
  const withQdq: LayerProfile = {
    ...PROFILE,
    layers: LAYERS.map((l, i) => (i === 1 ? { ...l, qdq_err: stats(38.5, 0.99), qdq_input: "relu" } : l)),
  };

  it("is a third trace only when some layer has it", () => {
    const names = (p: LayerProfile) => sqnrFigure(p).data.map((d) => scatter(d).name);
    expect(names(PROFILE)).not.toContain("own quantizer (qdq_err)");
    const trace = sqnrFigure(withQdq).data.find((d) => scatter(d).name === "own quantizer (qdq_err)");
    expect(scatter(trace).y).toEqual([null, 38.5, null, null, null]);
  });
});

describe("one name per layer (issue 35)", () => {
  const named: LayerProfile = {
    ...PROFILE,
    layers: LAYERS.map((l, i) =>
      i === 1 ? { ...l, name: "relu", canonical_id: "conv1", aliases: ["node_Conv_0", "relu"] } : l,
    ),
  };

  it("labels the ticks with the canonical id, as the activation-shift table does", () => {
    const { layout } = sqnrFigure(named);
    const ticks = (layout.xaxis as { ticktext?: string[] }).ticktext;
    expect(ticks?.[1]).toBe("conv1");
    expect(ticks).not.toContain("relu");
  });

  it("keeps the other names for the hover", () => {
    const layer1 = named.layers?.[1];
    if (!layer1) throw new Error("fixture");
    const text = hoverText(layer1, 5);
    expect(text.startsWith("<b>conv1</b>")).toBe(true);
    expect(text).toContain("also: relu, layer_1_DequantizeLinear_Output, node_Conv_0");
  });
});
