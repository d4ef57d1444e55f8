import { describe, expect, it } from "vitest";
import {
  PANEL_SIDE,
  classShares,
  clampPan,
  differenceScale,
  displaySize,
  outlinePath,
  outlinePeak,
  zoomPan,
} from "./taskMedia";

describe("zoomed panels", () => {
  it("fits the longer side to the panel at zoom 1 and enlarges by the zoom", () => {
    expect(displaySize([24, 48], 1)).toEqual({ width: PANEL_SIDE, height: PANEL_SIDE / 2 });
    expect(displaySize([24, 48], 4)).toEqual({ width: 4 * PANEL_SIDE, height: 2 * PANEL_SIDE });
  });

  it("keeps the zoomed picture covering the panel", () => {
    expect(clampPan({ x: 50, y: -5000 }, [24, 48], 4)).toEqual({ x: 0, y: -(2 * PANEL_SIDE - PANEL_SIDE / 2) });
    expect(clampPan({ x: -10, y: -10 }, [24, 48], 1)).toEqual({ x: 0, y: 0 }); // nothing to pan at zoom 1
  });

  it("zooms about the panel's centre", () => {
    const size = [100, 100];
    const pan = zoomPan({ x: 0, y: 0 }, size, 1, 2);
    expect(pan).toEqual({ x: -PANEL_SIDE / 2, y: -PANEL_SIDE / 2 });
    // the picture point under the centre stays there: (centre - pan) / zoom is unchanged
    const centre = PANEL_SIDE / 2;
    const before = (centre - pan.x) / (2 * (PANEL_SIDE / 100));
    const after = zoomPan(pan, size, 2, 8);
    expect((centre - after.x) / (8 * (PANEL_SIDE / 100))).toBeCloseTo(before, 9);
    expect(zoomPan(after, size, 8, 1)).toEqual({ x: 0, y: 0 });
  });
});

describe("differenceScale", () => {
  it("states what white means in the outputs' units", () => {
    expect(differenceScale(8, [0, 1])).toBe(
      "|golden − compressed| × 8: black = equal, white = 0.125 or more (the pictures span 1)",
    );
    expect(differenceScale(1, [-1, 1])).toContain("white = 2 or more");
  });
});

describe("classShares", () => {
  it("gives each class's share of the pixels, the truth's over its labelled pixels", () => {
    const shares = classShares(
      [
        { label: 0, colour: "#000000", golden_pixels: 10, compressed_pixels: 12, truth_pixels: 6 },
        { label: 2, colour: "#008000", golden_pixels: 30, compressed_pixels: 28, truth_pixels: 18 },
      ],
      40,
    );
    expect(shares.map((s) => s.label)).toEqual([2, 0]);
    expect(shares[0]).toEqual({ label: 2, colour: "#008000", golden: 0.75, compressed: 0.7, truth: 0.75 });
    expect(
      classShares([{ label: 1, colour: "#800000", golden_pixels: 4, compressed_pixels: 4 }], 4)[0]?.truth,
    ).toBeNull();
  });
});

describe("outlinePath", () => {
  it("draws the min/max band from +peak at the top to -peak at the bottom", () => {
    const path = outlinePath(
      [
        [-1, 1],
        [-0.5, 0],
      ],
      100,
      40,
      1,
    );
    expect(path).toBe("M0,0L100,20L100,30L0,40Z");
    expect(outlinePath([], 100, 40, 1)).toBe("");
  });

  it("takes one peak over several outlines, skipping missing ones", () => {
    expect(outlinePeak([[[-0.2, 0.3]], null, [[-1.5, 0.1]]])).toBe(1.5);
  });
});
