import { describe, expect, it } from "vitest";
import { parseConfigs, togglePresetIn, type Config } from "./sensitivityParams";
import {
  DEFAULT_SWEEP_PRESET_IDS,
  SWEEP_PRESETS,
  canonicalDeep,
  configSchema,
  parseBatchSizes,
  sweepPresetConfigs,
} from "./sweepParams";

// The shape of SweepJobParams' $defs in GET /job-kinds (trimmed).
const SCHEMA = {
  $defs: {
    WeightQuantIn: {
      properties: {
        type: { const: "weight_quant", default: "weight_quant", type: "string" },
        bits: { default: 8, type: "integer" },
        symmetric: { default: true, type: "boolean" },
        per_channel: { default: false, type: "boolean" },
      },
    },
    ActivationQuantIn: {
      properties: {
        type: { const: "activation_quant", default: "activation_quant", type: "string" },
        bits: { default: 8, type: "integer" },
        calibration: { default: "minmax", type: "string" },
        percentile: { anyOf: [{ type: "number" }, { type: "null" }], default: null },
      },
    },
    QuantizeIn: {
      properties: {
        type: { const: "quantize", default: "quantize", type: "string" },
        weights: { anyOf: [{ $ref: "#/$defs/WeightQuantIn" }, { type: "null" }], default: null },
        activations: { anyOf: [{ $ref: "#/$defs/ActivationQuantIn" }, { type: "null" }], default: null },
      },
    },
    FloatCastIn: {
      properties: {
        type: { const: "float_cast", default: "float_cast", type: "string" },
        dtype: { default: "fp16", type: "string" },
      },
    },
  },
};

const preset = (id: string) => {
  const found = SWEEP_PRESETS.find((p) => p.id === id);
  if (!found) throw new Error(id);
  return found;
};

describe("sweep presets", () => {
  const shape = configSchema(SCHEMA);
  const key = (c: Config) => canonicalDeep(c, shape);

  it("tick the API's default sweep: W8A8, W8A16, W4A8, W8, W4, fp16, prune 50 %, low-rank 0.5", () => {
    expect(DEFAULT_SWEEP_PRESET_IDS.map((id) => preset(id).label)).toEqual([
      "W8A8",
      "W8A16",
      "W4A8",
      "W8",
      "W4",
      "fp16",
      "prune 50 %",
      "low-rank 0.5",
    ]);
    expect(sweepPresetConfigs(["w8a8"])).toEqual([
      {
        type: "quantize",
        weights: { type: "weight_quant", bits: 8, per_channel: true },
        activations: { type: "activation_quant", bits: 8 },
      },
    ]);
  });

  it("learn the nested config types from the schema's $refs", () => {
    expect(shape.nested.get("quantize")).toEqual(
      new Map([
        ["weights", "weight_quant"],
        ["activations", "activation_quant"],
      ]),
    );
  });

  it("match a config written out in full, at every level, or with nested types left out", () => {
    // What the API echoes back in a job's params.
    const echoed = {
      type: "quantize",
      activations: { type: "activation_quant", bits: 8, calibration: "minmax", percentile: null },
      weights: { type: "weight_quant", bits: 8, symmetric: true, per_channel: true },
    };
    expect(key(echoed)).toBe(key(preset("w8a8").config));
    expect(key({ type: "quantize", weights: { bits: 8, per_channel: true }, activations: {} })).toBe(
      key(preset("w8a8").config),
    );
    expect(key(echoed)).not.toBe(key(preset("w8a16").config));
    expect(key({ type: "weight_quant", bits: 8 })).not.toBe(key(preset("w8").config));
  });

  it("toggle in the presets' order", () => {
    let configs = sweepPresetConfigs(["w8", "fp16"]);
    configs = togglePresetIn(configs, preset("w8a8"), SWEEP_PRESETS, key);
    expect(configs.map(key)).toEqual(sweepPresetConfigs(["w8a8", "w8", "fp16"]).map(key));
    configs = togglePresetIn(configs, preset("w8"), SWEEP_PRESETS, key);
    expect(configs.map(key)).toEqual(sweepPresetConfigs(["w8a8", "fp16"]).map(key));
    // The preset's own object is never shared with the list (nested objects included).
    const w8a8 = configs[0] as { weights: { bits: number } };
    w8a8.weights.bits = 2;
    expect((preset("w8a8").config.weights as { bits: number }).bits).toBe(8);
  });

  it("accept up to 64 configurations in JSON, and none when mixed precision supplies the points", () => {
    const types = new Set(["weight_quant", "quantize"]);
    expect(parseConfigs("[]", types, { max: 64, allowEmpty: true })).toEqual([]);
    expect(parseConfigs("[]", types)).toBe("Choose at least one configuration.");
    const many = JSON.stringify(Array.from({ length: 40 }, () => ({ type: "weight_quant" })));
    expect(parseConfigs(many, types, { max: 64 })).toHaveLength(40);
    expect(parseConfigs(many, types)).toBe("At most 32 configurations.");
  });
});

describe("latency batch sizes", () => {
  it("are 1 to 4 distinct whole numbers in 1..4096", () => {
    expect(parseBatchSizes("1, 32")).toEqual([1, 32]);
    expect(parseBatchSizes("1 8;64")).toEqual([1, 8, 64]);
    expect(parseBatchSizes("")).toBe("Give at least one batch size to time.");
    expect(parseBatchSizes("0")).toBe("Batch sizes must be whole numbers between 1 and 4096.");
    expect(parseBatchSizes("1.5")).toBe("Batch sizes must be whole numbers between 1 and 4096.");
    expect(parseBatchSizes("1, 1")).toBe("Each batch size once.");
    expect(parseBatchSizes("1,2,3,4,5")).toBe("At most 4 batch sizes.");
  });
});
