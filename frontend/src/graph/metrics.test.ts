import { describe, expect, it } from "vitest";

import type { LayerProfile } from "../api/types";
import { shiftMetric } from "./metrics";
import type { GraphNode } from "./types";

const node = (id: string, aliases: string[] = []): GraphNode => ({
  id,
  kind: "op",
  op_type: "Conv",
  aliases,
  module_path: id,
  group_path: [id],
  quantized: true,
  params: 1,
  macs: 1,
});

const profile = {
  layers: [
    {
      name: "relu",
      canonical_id: "conv1",
      compressed_name: "relu_dq",
      aliases: [],
      shift: { clip_rate: 0.04, dead_unit_rate: 0.25 },
    },
    {
      name: "relu_1",
      canonical_id: "conv2",
      compressed_name: "relu_1_dq",
      aliases: [],
      shift: { clip_rate: null, dead_unit_rate: 0 },
    },
    { name: "logits", canonical_id: "fc", compressed_name: "logits", aliases: [], shift: null },
  ],
} as unknown as LayerProfile;

describe("shiftMetric", () => {
  const nodes = [node("conv1"), node("conv2"), node("fc")];

  it("colours by clipping rate in percent, leaving out layers without a quantizer", () => {
    const metric = shiftMetric(nodes, profile, "clip", "golden");
    expect([...metric.values]).toEqual([["conv1", 4]]);
    expect(metric.unit).toBe("%");
    expect(metric.higherIsWorse).toBe(true);
  });

  it("colours by dead units, zero included, on the compressed side by its own names", () => {
    const compressed = [node("c1", ["relu_dq"]), node("c2", ["relu_1_dq"])];
    const metric = shiftMetric(compressed, profile, "dead", "compressed");
    expect(Object.fromEntries(metric.values)).toEqual({ c1: 25, c2: 0 });
  });
});
