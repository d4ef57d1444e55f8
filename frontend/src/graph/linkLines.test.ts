import { describe, expect, it } from "vitest";
import { boxPairs, linkSegments, type ScreenBox } from "./linkLines";

const rect = (left: number, top: number, right: number, bottom: number) => ({ left, top, right, bottom });

describe("lines between the side-by-side graphs", () => {
  it("draws links shown by the same two boxes once, selected if any of them is", () => {
    const links = [
      { g: "a", c: "x", sel: false },
      { g: "b", c: "y", sel: true }, // a and b are in one collapsed golden group, x and y in one compressed
      { g: "d", c: "z", sel: false },
      { g: "e", c: "hidden", sel: false }, // no box on the compressed side
    ];
    const golden: Record<string, string> = { a: "group:g", b: "group:g", d: "d", e: "e" };
    const compressed: Record<string, string | null> = { x: "group:c", y: "group:c", z: "z", hidden: null };
    const pairs = boxPairs(
      links,
      (l) => ({ golden: golden[l.g] ?? null, compressed: compressed[l.c] ?? null }),
      () => "#abc",
      (l) => l.sel,
    );
    expect(pairs).toEqual([
      { golden: "group:g", compressed: "group:c", colour: "#abc", selected: true },
      { golden: "d", compressed: "z", colour: "#abc", selected: false },
    ]);
  });

  it("joins box edges side by side, skips boxes panned out of view, and draws the selection last", () => {
    const g: Record<string, ScreenBox> = { a: { x: 100, y: 50, halfWidth: 40 }, b: { x: 100, y: 900, halfWidth: 40 } };
    const c: Record<string, ScreenBox> = { x: { x: 700, y: 80, halfWidth: 30 }, y: { x: 700, y: 60, halfWidth: 30 } };
    const segments = linkSegments(
      [
        { golden: "a", compressed: "x", colour: "#1", selected: true },
        { golden: "b", compressed: "y", colour: "#2", selected: false }, // b is below its canvas
        { golden: "a", compressed: "y", colour: "#3", selected: false },
      ],
      (id) => g[id] ?? null,
      (id) => c[id] ?? null,
      rect(10, 20, 500, 580),
      rect(520, 20, 1010, 580),
      { x: 10, y: 10 },
    );
    expect(segments.map((s) => [s.colour, s.x1, s.y1, s.x2, s.y2])).toEqual([
      ["#3", 130, 40, 660, 50], // from a's right edge (140) to y's left edge (670), relative to the origin
      ["#1", 130, 40, 660, 70],
    ]);
  });

  it("clamps an end to its canvas and, stacked, draws only the selected pair centre to centre", () => {
    const wide = { x: 450, y: 100, halfWidth: 200 }; // right edge 650, past its canvas's 500
    const other = { x: 560, y: 100, halfWidth: 100 }; // left edge 460, before its canvas's 520
    const pairs = [
      { golden: "a", compressed: "x", colour: "#1", selected: false },
      { golden: "a", compressed: "x", colour: "#2", selected: true },
    ];
    const side = linkSegments(
      pairs.slice(0, 1),
      () => wide,
      () => other,
      rect(0, 0, 500, 600),
      rect(520, 0, 1000, 600),
      {
        x: 0,
        y: 0,
      },
    );
    expect([side[0]?.x1, side[0]?.x2]).toEqual([500, 520]);
    const stacked = linkSegments(
      pairs,
      () => wide,
      () => ({ ...other, y: 700 }),
      rect(0, 0, 1000, 600),
      rect(0, 620, 1000, 1220),
      {
        x: 0,
        y: 0,
      },
    );
    expect(stacked.map((s) => [s.colour, s.x1, s.y1, s.x2, s.y2])).toEqual([["#2", 450, 100, 560, 700]]);
  });
});
