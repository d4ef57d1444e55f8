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

  it("quotes text that a spreadsheet would run as a formula, not negative numbers", () => {
    const csv = toCsv(
      ["name", "value"],
      [
        ['=HYPERLINK("http://x.example/","y")', -1.5],
        ["@SUM(1)", 0],
        ["\t=1", 1],
        ["-x", 2],
        ["a=b", 3],
      ],
    );
    expect(csv).toBe(
      'name,value\r\n"\'=HYPERLINK(""http://x.example/"",""y"")",-1.5\r\n\'@SUM(1),0\r\n\'\t=1,1\r\n\'-x,2\r\na=b,3\r\n',
    );
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
