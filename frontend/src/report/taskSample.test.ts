import { describe, expect, it } from "vitest";
import { changedWords, svgBox, wordDiff } from "./taskSample";

describe("wordDiff", () => {
  it("marks the words the compressed transcript lost and the ones it wrote instead", () => {
    expect(wordDiff("the cat sat on the mat", "the cat sit on mat")).toEqual([
      { op: "same", text: "the cat" },
      { op: "removed", text: "sat" },
      { op: "added", text: "sit" },
      { op: "same", text: "on" },
      { op: "removed", text: "the" },
      { op: "same", text: "mat" },
    ]);
    expect(changedWords("the cat sat on the mat", "the cat sit on mat")).toBe(3);
  });

  it("keeps every word of both sides, in order, and nothing else", () => {
    const [a, b] = ["ab c ba cab c", "c ab ba ba cab"];
    const parts = wordDiff(a, b);
    const side = (ops: string[]) =>
      parts
        .filter((p) => ops.includes(p.op))
        .map((p) => p.text)
        .join(" ");
    expect(side(["same", "removed"])).toBe(a);
    expect(side(["same", "added"])).toBe(b);
  });

  it("handles empty transcripts and equal ones", () => {
    expect(wordDiff("", "a b")).toEqual([{ op: "added", text: "a b" }]);
    expect(wordDiff("a b", "")).toEqual([{ op: "removed", text: "a b" }]);
    expect(wordDiff("a  b", "a b")).toEqual([{ op: "same", text: "a b" }]);
    expect(changedWords("x y", "x y")).toBe(0);
  });
});

describe("svgBox", () => {
  it("turns xyxy into a rect clipped to the image [height, width]", () => {
    expect(svgBox([10, 5, 30, 25], [64, 48])).toEqual({ x: 10, y: 5, width: 20, height: 20 });
    expect(svgBox([-5, 50, 60, 80], [64, 48])).toEqual({ x: 0, y: 50, width: 48, height: 14 });
    expect(svgBox([50, 0, 60, 10], [64, 48])).toBeNull(); // wholly outside
  });
});
