import { describe, expect, it } from "vitest";
import { needsReveal } from "./reveal";

describe("needsReveal", () => {
  it("scrolls a panel that starts below or above the viewport, and leaves one in view alone", () => {
    expect(needsReveal({ top: 1642, bottom: 2100 }, 900)).toBe(true);
    expect(needsReveal({ top: 600, bottom: 1000 }, 900)).toBe(true);
    expect(needsReveal({ top: -40, bottom: 300 }, 900)).toBe(true);
    expect(needsReveal({ top: 100, bottom: 800 }, 900)).toBe(false);
  });
});
