import { describe, expect, it } from "vitest";

import { modelFileHref } from "./ModelFileLink";

describe("modelFileHref", () => {
  it("points at the API's model file route, the id escaped", () => {
    expect(modelFileHref("0b6c-1")).toBe("/api/v1/models/0b6c-1/file");
    expect(modelFileHref("a/b")).toBe("/api/v1/models/a%2Fb/file");
  });
});
