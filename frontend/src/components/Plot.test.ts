import { describe, expect, it } from "vitest";
import { withToolbarRoom } from "./Plot";

describe("withToolbarRoom", () => {
  it("keeps 32 px for the toolbar and leaves a legend below the plot where it is", () => {
    const out = withToolbarRoom({ margin: { t: 10, l: 60 }, legend: { orientation: "h", y: -0.3 } });
    expect(out.margin).toEqual({ t: 32, l: 60 });
    expect(out.legend).toEqual({ orientation: "h", y: -0.3 });
  });

  it("puts a legend drawn above the plot right on it, with a row of its own below the toolbar", () => {
    const out = withToolbarRoom({ legend: { orientation: "h", x: 0, y: 1.12 } });
    expect(out.legend).toEqual({ orientation: "h", x: 0, y: 1, yanchor: "bottom" });
    expect(out.margin?.t).toBe(56);
    // on a phone there is no toolbar: the legend only needs its own room (Plotly's automargin gives it)
    expect(withToolbarRoom({ legend: { y: 1.02 } }, true).margin?.t).toBe(32);
    // a hidden legend keeps its place and the plain margin
    const hidden = withToolbarRoom({ showlegend: false, legend: { y: 1.12 } });
    expect([hidden.legend?.y, hidden.margin?.t]).toEqual([1.12, 32]);
  });

  it("lets axes make room for their tick labels, unless a chart says otherwise", () => {
    const out = withToolbarRoom({ xaxis: { title: { text: "layer" } }, yaxis: { automargin: false } });
    expect(out.xaxis?.automargin).toBe(true);
    expect(out.yaxis?.automargin).toBe(false);
    expect(out.xaxis?.title).toEqual({ text: "layer" });
  });

  it("draws axis titles at 11 px on a phone, unless a chart sets their size", () => {
    const out = withToolbarRoom(
      { xaxis: { title: { text: "layer" } }, yaxis: { title: { text: "SQNR", font: { size: 14 } } } },
      true,
    );
    expect(out.xaxis?.title).toEqual({ text: "layer", font: { size: 11 } });
    expect(out.yaxis?.title).toEqual({ text: "SQNR", font: { size: 14 } });
  });
});
