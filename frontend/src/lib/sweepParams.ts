// The sweep launcher's configurations and settings. Presets are whole-model configurations; the API's own
// default list (SweepJobParams.configs: W8A8, W8A16, W4A8, W8, W4 per channel, fp16, prune 50 %, low-rank 0.5)
// is ticked first. Configurations nest ("quantize" holds a weight and an activation quantizer), so two are the
// same when they are equal once every level has its type's defaults from the schema's $defs filled in.
import { isObject, type JsonObject } from "./json";
import { configDefaults, type Config, type Preset } from "./sensitivityParams";

const perChannel = (bits: number) => ({ type: "weight_quant", bits, per_channel: true });
const activations = (bits: number) => ({ type: "activation_quant", bits });

export const SWEEP_PRESETS: readonly Preset[] = [
  {
    id: "w8a8",
    label: "W8A8",
    title: "8-bit weights per channel, 8-bit activations (int8 QDQ in ONNX Runtime)",
    config: { type: "quantize", weights: perChannel(8), activations: activations(8) },
  },
  {
    id: "w8a16",
    label: "W8A16",
    title: "8-bit weights per channel, 16-bit activations",
    config: { type: "quantize", weights: perChannel(8), activations: activations(16) },
  },
  {
    id: "w4a8",
    label: "W4A8",
    title: "4-bit weights per channel, 8-bit activations",
    config: { type: "quantize", weights: perChannel(4), activations: activations(8) },
  },
  { id: "w8", label: "W8", title: "8-bit weights per channel (int8 weights in ONNX Runtime)", config: perChannel(8) },
  { id: "w6", label: "W6", title: "6-bit weights per channel", config: perChannel(6) },
  { id: "w4", label: "W4", title: "4-bit weights per channel", config: perChannel(4) },
  {
    id: "w4g32",
    label: "W4 g32",
    title:
      "4-bit weights in groups of 32 (asymmetric, as LLM toolkits make them): MatMul/Gemm layers run on ONNX Runtime's MatMulNBits kernels",
    config: { type: "weight_quant", bits: 4, symmetric: false, group_size: 32 },
  },
  {
    id: "w4g128",
    label: "W4 g128",
    title: "4-bit weights in groups of 128 (asymmetric): MatMul/Gemm layers on ONNX Runtime's MatMulNBits kernels",
    config: { type: "weight_quant", bits: 4, symmetric: false, group_size: 128 },
  },
  {
    id: "w8t",
    label: "W8 per tensor",
    title: "8-bit weights, one scale per tensor",
    config: { type: "weight_quant", bits: 8 },
  },
  { id: "fp16", label: "fp16", title: "Weights and compute in fp16", config: { type: "float_cast", dtype: "fp16" } },
  { id: "bf16", label: "bf16", title: "bfloat16 round trip", config: { type: "float_cast", dtype: "bf16" } },
  { id: "a8", label: "A8", title: "8-bit activations only", config: activations(8) },
  {
    id: "prune50",
    label: "prune 50 %",
    title: "Half of the weights zeroed (smallest magnitude)",
    config: { type: "magnitude_prune", sparsity: 0.5 },
  },
  {
    id: "prune75",
    label: "prune 75 %",
    title: "Three quarters of the weights zeroed (smallest magnitude)",
    config: { type: "magnitude_prune", sparsity: 0.75 },
  },
  {
    id: "chprune25",
    label: "channel prune 25 %",
    title:
      "A quarter of the output channels (smallest L1 norm) zeroed, then removed from the exported model where the graph allows",
    config: { type: "channel_prune", sparsity: 0.25 },
  },
  {
    id: "sparse24",
    label: "2:4 sparsity",
    title:
      "Two of every four input weights zeroed (smallest magnitude): fidelity only, the point needs sparse kernels (no speed or size claimed)",
    config: { type: "nm_sparsity", n: 2, m: 4 },
  },
  {
    id: "prune50w8",
    label: "prune 50 % → W8",
    title:
      "Half of the weights zeroed, then 8-bit weights per channel (a schedule: the point's cause attribution splits its divergence by stage)",
    config: { type: "schedule", stages: [{ type: "magnitude_prune", sparsity: 0.5 }, perChannel(8)] },
  },
  {
    id: "lowrank50",
    label: "low-rank 0.5",
    title: "Truncated SVD keeping half of the rank",
    config: { type: "low_rank", rank_ratio: 0.5 },
  },
  {
    id: "lowrank25",
    label: "low-rank 0.25",
    title: "Truncated SVD keeping a quarter of the rank",
    config: { type: "low_rank", rank_ratio: 0.25 },
  },
];

/** SweepJobParams' default configurations, in the API's order. */
export const DEFAULT_SWEEP_PRESET_IDS: readonly string[] = [
  "w8a8",
  "w8a16",
  "w4a8",
  "w8",
  "w4",
  "fp16",
  "prune50",
  "lowrank50",
];

export const MAX_SWEEP_CONFIGS = 64;

export const sweepPresetConfigs = (ids: readonly string[]): Config[] =>
  ids.flatMap((id) => SWEEP_PRESETS.filter((p) => p.id === id)).map((p) => structuredClone(p.config));

/** Each config type's defaults, and the type of its nested configs by field (quantize.weights → weight_quant). */
export interface ConfigSchema {
  defaults: Map<string, Config>;
  nested: Map<string, Map<string, string>>;
}

function refType(schema: JsonObject, property: unknown): string | null {
  if (!isObject(property)) return null;
  const refs = [
    property.$ref,
    ...(Array.isArray(property.anyOf) ? property.anyOf.map((v) => (isObject(v) ? v.$ref : null)) : []),
  ];
  for (const ref of refs) {
    if (typeof ref !== "string" || !ref.startsWith("#/$defs/")) continue;
    const defs = isObject(schema.$defs) ? schema.$defs : {};
    const def = defs[ref.slice("#/$defs/".length)];
    const typeProperty = isObject(def) && isObject(def.properties) ? def.properties.type : null;
    const tag = isObject(typeProperty) ? (typeProperty.const ?? typeProperty.default) : null;
    if (typeof tag === "string") return tag;
  }
  return null;
}

export function configSchema(schema: unknown): ConfigSchema {
  const nested = new Map<string, Map<string, string>>();
  const defs = isObject(schema) && isObject(schema.$defs) ? schema.$defs : {};
  for (const def of Object.values(defs)) {
    if (!isObject(def) || !isObject(def.properties) || !isObject(schema)) continue;
    const typeProperty = def.properties.type;
    const tag = isObject(typeProperty) ? (typeProperty.const ?? typeProperty.default) : undefined;
    if (typeof tag !== "string") continue;
    const fields = new Map<string, string>();
    for (const [name, property] of Object.entries(def.properties)) {
      const type = refType(schema, property);
      if (type) fields.set(name, type);
    }
    if (fields.size) nested.set(tag, fields);
  }
  return { defaults: configDefaults(schema), nested };
}

function filled(config: Config, schema: ConfigSchema, type: string | null): unknown {
  const tag = typeof config.type === "string" ? config.type : type;
  const fields = tag ? schema.nested.get(tag) : undefined;
  const values: Config = { ...(tag ? (schema.defaults.get(tag) ?? {}) : {}), ...config };
  const entries = Object.entries(values)
    .map(([k, v]): [string, unknown] => {
      if (isObject(v)) return [k, filled(v, schema, fields?.get(k) ?? null)];
      if (Array.isArray(v))
        return [k, (v as unknown[]).map((item) => (isObject(item) ? filled(item, schema, null) : item))];
      return [k, v];
    })
    .sort(([a], [b]) => a.localeCompare(b));
  return Object.fromEntries(entries);
}

/** A config with the defaults of every level filled in, keys sorted: comparable as JSON. */
export function canonicalDeep(config: Config, schema: ConfigSchema): string {
  return JSON.stringify(filled(config, schema, null));
}

/** "1, 32" → [1, 32] (whole numbers 1..4096, at most 4, no repeats), else why not. */
export function parseBatchSizes(text: string): number[] | string {
  const parts = text
    .split(/[\s,;]+/)
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 0) return "Give at least one batch size to time.";
  const values = parts.map(Number);
  if (values.some((v) => !Number.isInteger(v) || v < 1 || v > 4096))
    return "Batch sizes must be whole numbers between 1 and 4096.";
  if (new Set(values).size !== values.length) return "Each batch size once.";
  if (values.length > 4) return "At most 4 batch sizes.";
  return values;
}
