import { describe, expect, it } from "vitest";

import type { Job, LayerProfile } from "../api/types";
import { acrossJobsRows } from "./NodeAcrossJobs";
import type { GraphNode } from "./types";

const conv: GraphNode = {
  id: "conv1",
  kind: "op",
  op_type: "Conv",
  aliases: ["node_conv2d", "conv1.weight"],
  module_path: "conv1",
  group_path: ["conv1"],
  quantized: false,
  params: 80,
  macs: 4608,
};

const job = (id: string, golden: string, compressed: string): Job =>
  ({
    id,
    kind: "fidelity",
    name: id,
    created_at: "2026-12-01T00:00:00Z",
    params: { golden_model_id: golden, compressed_model_id: compressed },
  }) as unknown as Job;

const layer = (name: string, canonical: string, compressed: string, acc: number) => ({
  name,
  canonical_id: canonical,
  compressed_name: compressed,
  aliases: [],
  accumulated: { sqnr_db: acc },
  local: { sqnr_db: acc + 10 },
  shift: { clip_rate: 0.01 },
});

const profile = (...layers: ReturnType<typeof layer>[]) => ({ layers }) as unknown as LayerProfile;

describe("acrossJobsRows", () => {
  it("finds the node in each job where this model is golden or compressed, by id, alias or name", () => {
    const rows = acrossJobsRows(conv, [conv], "m", [
      { job: job("a", "m", "x"), profile: profile(layer("relu", "conv1", "relu_dq", 30)) },
      { job: job("b", "y", "m"), profile: profile(layer("g_relu", "g_conv", "node_conv2d", 25)) },
      { job: job("c", "m", "x"), profile: profile(layer("fc", "fc", "fc", 40)) },
      { job: job("d", "m", "x"), profile: undefined },
      { job: job("e", "p", "q"), profile: profile(layer("relu", "conv1", "relu", 1)) },
    ]);
    expect(rows.map((r) => [r.job.id, r.side, r.matchedTo, r.accumulated, r.local, r.clip])).toEqual([
      ["a", "golden", "relu_dq", 30, 40, 0.01],
      ["b", "compressed", "g_relu", 25, 35, 0.01],
    ]);
  });
});
