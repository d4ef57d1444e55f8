import { describe, expect, it } from "vitest";
import { parseTags } from "./tags";

describe("parseTags", () => {
  it("splits on commas and spaces, keeps each tag once in typed order", () => {
    expect(parseTags(" int8, v2  int8,,release-1 ")).toEqual({ tags: ["int8", "v2", "release-1"], bad: [] });
  });
  it("reports what the API would refuse", () => {
    expect(parseTags('ok "quoted" émoji')).toEqual({ tags: ["ok"], bad: ['"quoted"', "émoji"] });
    expect(parseTags("x".repeat(41)).bad).toHaveLength(1);
  });
  it("reads an empty field as no tags", () => {
    expect(parseTags("  ")).toEqual({ tags: [], bad: [] });
  });
});
