// The sensitivity launcher's configurations: presets a person ticks, and the JSON an expert edits, kept in
// step. Two configurations are the same when they are equal once the defaults of the kind's JSON schema
// (GET /job-kinds → params_schema.$defs) are filled in, so {"type": "weight_quant", "bits": 8} ticks "W8".
import { isObject, type JsonObject } from "./json";

export type Config = JsonObject;

export interface Preset {
  id: string;
  label: string;
  title: string;
  config: Config;
}

export const PRESETS: readonly Preset[] = [
  { id: "w8", label: "W8", title: "8-bit weights", config: { type: "weight_quant", bits: 8 } },
  { id: "w6", label: "W6", title: "6-bit weights", config: { type: "weight_quant", bits: 6 } },
  { id: "w4", label: "W4", title: "4-bit weights", config: { type: "weight_quant", bits: 4 } },
  { id: "w2", label: "W2", title: "2-bit weights", config: { type: "weight_quant", bits: 2 } },
  {
    id: "w4c",
    label: "W4 per channel",
    title: "4-bit weights, one scale per output channel",
    config: { type: "weight_quant", bits: 4, per_channel: true },
  },
  {
    id: "noise4",
    label: "noise-4",
    title: "Noise with the power of 4-bit quantization",
    config: { type: "noise", bits: 4 },
  },
  { id: "fp16", label: "fp16", title: "fp16 round trip", config: { type: "float_cast", dtype: "fp16" } },
  { id: "a8", label: "A8", title: "8-bit activations", config: { type: "activation_quant", bits: 8 } },
  {
    id: "prune50",
    label: "prune 50 %",
    title: "Half of the weights zeroed (smallest magnitude)",
    config: { type: "magnitude_prune", sparsity: 0.5 },
  },
  {
    id: "lowrank50",
    label: "low-rank 0.5",
    title: "Truncated SVD keeping half of the rank",
    config: { type: "low_rank", rank_ratio: 0.5 },
  },
];

/** What the API runs when no configurations are given (SensitivityJobParams' default). */
export const DEFAULT_PRESET_IDS: readonly string[] = ["w8", "w6", "w4", "noise4"];

export const presetConfigs = (ids: readonly string[]): Config[] =>
  PRESETS.filter((p) => ids.includes(p.id)).map((p) => ({ ...p.config }));

/** Each config type's field defaults, from the params schema's $defs (a def whose "type" property is it). */
export function configDefaults(schema: unknown): Map<string, Config> {
  const defaults = new Map<string, Config>();
  const defs = isObject(schema) && isObject(schema.$defs) ? schema.$defs : {};
  for (const def of Object.values(defs)) {
    if (!isObject(def) || !isObject(def.properties)) continue;
    const typeProperty = def.properties.type;
    const tag = isObject(typeProperty) ? (typeProperty.const ?? typeProperty.default) : undefined;
    if (typeof tag !== "string") continue;
    const values: Config = {};
    for (const [name, property] of Object.entries(def.properties))
      if (isObject(property) && "default" in property) values[name] = property.default;
    defaults.set(tag, values);
  }
  return defaults;
}

/** A config with its type's defaults filled in, keys sorted: comparable as JSON. */
export function canonical(config: Config, defaults: Map<string, Config>): string {
  const filled: Config = { ...(defaults.get(String(config.type)) ?? {}), ...config };
  return JSON.stringify(Object.fromEntries(Object.entries(filled).sort(([a], [b]) => a.localeCompare(b))));
}

export function hasConfig(configs: readonly Config[], config: Config, defaults: Map<string, Config>): boolean {
  const key = canonical(config, defaults);
  return configs.some((c) => canonical(c, defaults) === key);
}

/** Adds the preset's config (at the preset's place among the presets) or removes every config equal to it. */
export function togglePreset(configs: readonly Config[], preset: Preset, defaults: Map<string, Config>): Config[] {
  return togglePresetIn(configs, preset, PRESETS, (c) => canonical(c, defaults));
}

/**
 * togglePreset over any list of presets, with configurations compared by `key` (a canonical JSON): adds the
 * preset's config at its place among the presets, or removes every config equal to it.
 */
export function togglePresetIn(
  configs: readonly Config[],
  preset: Preset,
  presets: readonly Preset[],
  key: (config: Config) => string,
): Config[] {
  const mine = key(preset.config);
  if (configs.some((c) => key(c) === mine)) return configs.filter((c) => key(c) !== mine);
  const order = (c: Config) => {
    const k = key(c);
    const i = presets.findIndex((p) => key(p.config) === k);
    return i < 0 ? presets.length : i;
  };
  const place = presets.indexOf(preset);
  const at = configs.findIndex((c) => order(c) > place);
  const copy = [...configs];
  copy.splice(at < 0 ? copy.length : at, 0, structuredClone(preset.config));
  return copy;
}

/** The config "type"s the API accepts: the discriminator's mapping of `configs` in a kind's params schema. */
export function configTypes(schema: JsonObject): Set<string> {
  const items = isObject(schema.properties) ? schema.properties.configs : null;
  const mapping = isObject(items) && isObject(items.items) ? items.items.discriminator : null;
  // Empty when the schema has no discriminator: any "type" is sent, and the API judges it.
  return new Set(isObject(mapping) && isObject(mapping.mapping) ? Object.keys(mapping.mapping) : []);
}

export const MAX_CONFIGS = 32;

/**
 * The JSON editor's text as a list of configs, or why not. Checks the shape only (an array of 1 to 32
 * objects whose "type" the API knows); the API checks every field and answers 422 naming it.
 */
export function parseConfigs(
  text: string,
  types: ReadonlySet<string>,
  { max = MAX_CONFIGS, allowEmpty = false }: { max?: number; allowEmpty?: boolean } = {},
): Config[] | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return `Not JSON: ${e instanceof Error ? e.message : String(e)}`;
  }
  if (!Array.isArray(value)) return "Configurations must be a JSON array of objects.";
  if (value.length === 0 && !allowEmpty) return "Choose at least one configuration.";
  if (value.length > max) return `At most ${max.toString()} configurations.`;
  for (const [i, item] of value.entries()) {
    if (!isObject(item)) return `Configuration ${(i + 1).toString()} is not an object.`;
    if (typeof item.type !== "string" || (types.size > 0 && !types.has(item.type)))
      return `Configuration ${(i + 1).toString()} has no known "type" (one of ${[...types].join(", ")}).`;
  }
  return value as Config[];
}

export const formatConfigs = (configs: readonly Config[]): string =>
  `[\n${configs.map((c) => `  ${JSON.stringify(c)}`).join(",\n")}\n]`;

/** "6, 5" → [6, 5]; empty → [] (no plan); else why not. */
export function parseBits(text: string, max = 8): number[] | string {
  const parts = text
    .split(/[\s,;]+/)
    .map((p) => p.trim())
    .filter(Boolean);
  const values = parts.map(Number);
  if (values.some((v) => !Number.isFinite(v))) return "Average bits must be numbers separated by commas.";
  if (values.some((v) => v < 1 || v > 16)) return "Average bits must lie between 1 and 16.";
  if (values.length > max) return `At most ${max.toString()} average bit-widths.`;
  return values;
}
