import { describe, expect, it } from "vitest";
import {
  DEFAULT_PRESET_IDS,
  PRESETS,
  canonical,
  configDefaults,
  formatConfigs,
  hasConfig,
  parseBits,
  parseConfigs,
  presetConfigs,
  togglePreset,
} from "./sensitivityParams";

// The shape of SensitivityJobParams' $defs in GET /job-kinds (trimmed).
const SCHEMA = {
  $defs: {
    WeightQuantIn: {
      properties: {
        type: { const: "weight_quant", default: "weight_quant", type: "string" },
        bits: { default: 8, maximum: 16, minimum: 2, type: "integer" },
        symmetric: { default: true, type: "boolean" },
        per_channel: { default: false, type: "boolean" },
      },
    },
    NoiseIn: {
      properties: {
        type: { const: "noise", default: "noise", type: "string" },
        bits: { default: 8, type: "integer" },
        seed: { default: 0, type: "integer" },
      },
    },
  },
};
const TYPES = new Set(["weight_quant", "noise", "float_cast"]);

const preset = (id: string) => {
  const found = PRESETS.find((p) => p.id === id);
  if (!found) throw new Error(id);
  return found;
};

describe("config defaults", () => {
  const defaults = configDefaults(SCHEMA);

  it("come from the schema's $defs", () => {
    expect(defaults.get("weight_quant")).toEqual({
      type: "weight_quant",
      bits: 8,
      symmetric: true,
      per_channel: false,
    });
    expect(configDefaults({})).toEqual(new Map());
  });

  it("make a preset equal to the same config written out in full", () => {
    const full = { per_channel: false, bits: 8, symmetric: true, type: "weight_quant" };
    expect(canonical(full, defaults)).toBe(canonical({ type: "weight_quant" }, defaults));
    expect(hasConfig([full], preset("w8").config, defaults)).toBe(true);
    expect(hasConfig([full], preset("w4").config, defaults)).toBe(false);
    expect(hasConfig([{ type: "weight_quant", bits: 4, per_channel: true }], preset("w4").config, defaults)).toBe(
      false,
    );
  });
});

describe("presets", () => {
  const defaults = configDefaults(SCHEMA);

  it("default to what the API runs when given none", () => {
    expect(presetConfigs(DEFAULT_PRESET_IDS)).toEqual([
      { type: "weight_quant", bits: 8 },
      { type: "weight_quant", bits: 6 },
      { type: "weight_quant", bits: 4 },
      { type: "noise", bits: 4 },
    ]);
  });

  it("toggle in place: removed when present, added in the presets' order", () => {
    const start = presetConfigs(["w8", "w4"]);
    const withW6 = togglePreset(start, preset("w6"), defaults);
    expect(withW6.map((c) => c.bits)).toEqual([8, 6, 4]);
    expect(togglePreset(withW6, preset("w6"), defaults)).toEqual(start);
    const custom = [{ type: "noise", bits: 3 }];
    expect(togglePreset(custom, preset("w8"), defaults)).toEqual([{ type: "weight_quant", bits: 8 }, ...custom]);
    // A config written in full is removed by its preset.
    expect(togglePreset([{ type: "weight_quant", bits: 8, symmetric: true }], preset("w8"), defaults)).toEqual([]);
  });
});

describe("the JSON editor", () => {
  it("round-trips configs", () => {
    const configs = presetConfigs(["w8", "noise4"]);
    expect(parseConfigs(formatConfigs(configs), TYPES)).toEqual(configs);
    expect(formatConfigs(configs)).toBe('[\n  {"type":"weight_quant","bits":8},\n  {"type":"noise","bits":4}\n]');
  });

  it("says what is wrong", () => {
    expect(parseConfigs("[{", TYPES)).toMatch(/^Not JSON/);
    expect(parseConfigs("{}", TYPES)).toBe("Configurations must be a JSON array of objects.");
    expect(parseConfigs("[]", TYPES)).toBe("Choose at least one configuration.");
    expect(parseConfigs("[1]", TYPES)).toBe("Configuration 1 is not an object.");
    expect(parseConfigs('[{"type": "noise"}, {"bits": 3}]', TYPES)).toMatch(/^Configuration 2 has no known "type"/);
    expect(parseConfigs(JSON.stringify(Array(33).fill({ type: "noise" })), TYPES)).toBe("At most 32 configurations.");
    // Without a list of types (a schema without a discriminator) the API judges the type.
    expect(parseConfigs('[{"type": "new_kind"}]', new Set())).toEqual([{ type: "new_kind" }]);
  });
});

describe("average bits", () => {
  it("parses a list", () => {
    expect(parseBits("6, 5")).toEqual([6, 5]);
    expect(parseBits(" 4.5 ;3 ")).toEqual([4.5, 3]);
    expect(parseBits("")).toEqual([]);
    expect(parseBits("6, x")).toBe("Average bits must be numbers separated by commas.");
    expect(parseBits("0.5")).toBe("Average bits must lie between 1 and 16.");
    expect(parseBits("1 2 3 4 5 6 7 8 9")).toBe("At most 8 average bit-widths.");
  });
});
