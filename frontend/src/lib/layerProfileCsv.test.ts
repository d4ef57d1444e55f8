import { describe, expect, it } from "vitest";
import type { LayerProfile } from "../api/types";
import { toCsv } from "./csv";
import { countMissing } from "./layerProfile";
import { cosineCsv, sqnrCsv } from "./layerProfileCsv";
import { LAYERS, PROFILE, stats } from "./layerProfileFixtures";

describe("CSV", () => {
  it("writes SQNR rows with inf for identical outputs and empty cells for missing values", () => {
    const { header, rows } = sqnrCsv(PROFILE);
    const lines = toCsv(header, rows).split("\r\n");
    expect(lines[0]).toBe(
      "depth,depth_fraction,layer,name,compressed_name,op_type,accumulated_sqnr_db,local_sqnr_db,qdq_err_sqnr_db,local_note",
    );
    expect(lines[1]).toBe("0,0,layer_0,layer_0,layer_0_DequantizeLinear_Output,Input,inf,inf,,");
    expect(lines[3]).toBe(
      "2,0.5,layer_2,layer_2,layer_2_DequantizeLinear_Output,Conv,42.1,,,the compressed layer has two inputs",
    );
    expect(rows).toHaveLength(5);
  });

  it("writes cosine rows", () => {
    const { header, rows } = cosineCsv(PROFILE);
    expect(header).toContain("local_cosine_min");
    expect(rows[2]?.slice(6)).toEqual([
      0.9999,
      0.9999 - 0.0001,
      undefined,
      undefined,
      "the compressed layer has two inputs",
    ]);
  });
});

describe("the own quantizer's error (qdq_err)", () => {
  const withQdq: LayerProfile = {
    ...PROFILE,
    layers: LAYERS.map((l, i) => (i === 1 ? { ...l, qdq_err: stats(38.5, 0.99), qdq_input: "relu" } : l)),
  };

  it("is a CSV column and does not count as a missing value where a tensor is not re-quantized", () => {
    const csv = sqnrCsv(withQdq);
    expect(csv.header).toContain("qdq_err_sqnr_db");
    expect(csv.rows[1]?.[csv.header.indexOf("qdq_err_sqnr_db")]).toBe(38.5);
    expect(countMissing(withQdq.layers ?? [], "sqnr")).toBe(countMissing(LAYERS, "sqnr"));
  });
});
