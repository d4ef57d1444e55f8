import { describe, expect, it } from "vitest";
import { slug, toCsv } from "./csv";

describe("toCsv", () => {
  it("quotes cells with separators, quotes and newlines; leaves missing values empty", () => {
    const csv = toCsv(
      ["name", "value"],
      [
        ["a,b", 1.5],
        ['say "hi"', null],
        ["two\nlines", true],
      ],
    );
    expect(csv).toBe('name,value\r\n"a,b",1.5\r\n"say ""hi""",\r\n"two\nlines",true\r\n');
  });

  it("keeps full precision of numbers", () => {
    expect(toCsv(["x"], [[0.00010547336096828555]])).toBe("x\r\n0.00010547336096828555\r\n");
  });
});

describe("slug", () => {
  it("makes file names", () => {
    expect(slug("KL histogram / job 1")).toBe("kl-histogram-job-1");
    expect(slug("!!!")).toBe("data");
  });
});
