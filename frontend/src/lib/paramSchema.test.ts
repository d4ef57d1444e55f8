import { describe, expect, it } from "vitest";
import { numericParam, parseParam } from "./paramSchema";

const schema = {
  properties: {
    batch_size: { default: 64, maximum: 65536, minimum: 1, title: "Batch Size", type: "integer" },
    threshold_kl: { default: 0.1, minimum: 0, title: "Threshold Kl", type: "number", description: "KL limit." },
    dataset_id: { format: "uuid", type: "string" },
    chunks: {
      anyOf: [{ maximum: 1000, minimum: 1, type: "integer" }, { type: "null" }],
      default: null,
      title: "Chunks",
      description: "Null: automatic.",
    },
  },
};

describe("numericParam", () => {
  it("reads defaults and bounds", () => {
    expect(numericParam(schema, "batch_size")).toEqual({
      name: "batch_size",
      title: "Batch Size",
      description: "",
      integer: true,
      default: 64,
      minimum: 1,
      maximum: 65536,
      nullable: false,
    });
    expect(numericParam(schema, "threshold_kl")?.maximum).toBeNull();
    expect(numericParam(schema, "dataset_id")).toBeNull();
    expect(numericParam(schema, "missing")).toBeNull();
  });

  it("checks form values", () => {
    const batch = numericParam(schema, "batch_size");
    if (!batch) throw new Error("no batch_size");
    expect(parseParam(batch, "32")).toBe(32);
    expect(parseParam(batch, "1.5")).toBe("Batch Size must be a whole number");
    expect(parseParam(batch, "0")).toBe("Batch Size must be at least 1");
    expect(parseParam(batch, "")).toBe("Batch Size must be a number");
  });

  it("reads an optional integer (int | None) and lets it be left empty", () => {
    const chunks = numericParam(schema, "chunks");
    expect(chunks).toMatchObject({ integer: true, minimum: 1, maximum: 1000, default: null, nullable: true });
    if (!chunks) throw new Error("no chunks");
    expect(parseParam(chunks, " ")).toBeNull();
    expect(parseParam(chunks, "3")).toBe(3);
    expect(parseParam(chunks, "0")).toBe("Chunks must be at least 1");
  });
});
