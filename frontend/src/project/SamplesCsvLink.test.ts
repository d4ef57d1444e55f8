import { describe, expect, it } from "vitest";
import { samplesCsvHref } from "./SamplesCsvLink";

describe("samplesCsvHref", () => {
  it("names the job and the output, escaped", () => {
    expect(samplesCsvHref("abc", "logits/0 & more")).toBe(
      "/api/v1/jobs/abc/fidelity/samples.csv?output=logits%2F0+%26+more",
    );
  });
});
