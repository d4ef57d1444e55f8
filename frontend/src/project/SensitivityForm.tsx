// The sensitivity launcher: a model and a calibration set, the compression configurations (presets to tick,
// or the raw JSON for experts, kept in step), the all-but view, mixed-precision average bit-widths, channel
// importance methods and the scan's size. Defaults and bounds come from SensitivityJobParams' schema.
import { useId, useMemo, useState, type SubmitEvent } from "react";
import { useDatasets } from "../api/datasets";
import { useCreateJob } from "../api/jobs";
import { useModels } from "../api/models";
import { ErrorMessage } from "../components/QueryView";
import { isObject, type JsonObject } from "../lib/json";
import { numericParam, parseParam, type NumericParam } from "../lib/paramSchema";
import { describeConfig } from "../lib/sensitivity";
import {
  DEFAULT_PRESET_IDS,
  PRESETS,
  configDefaults,
  formatConfigs,
  hasConfig,
  parseBits,
  parseConfigs,
  presetConfigs,
  togglePreset,
  type Config,
} from "../lib/sensitivityParams";
import { DatasetSelect, ModelSelect, NumberField, Queued, describeParam } from "./fields";

const NUMERIC = { max_samples: "Calibration samples", batch_size: "Batch size", chunks: "Chunks" } as const;
const METHODS = [
  { id: "l1", label: "L1 norm" },
  { id: "l2", label: "L2 norm" },
  { id: "taylor", label: "Taylor (torch models)" },
  { id: "reconstruction", label: "Reconstruction" },
] as const;
const DEFAULT_METHODS = ["l1", "l2"];
const DEFAULT_BITS = "6, 5";

/** The config "type"s the API accepts: the discriminator's mapping of `configs`. */
function configTypes(schema: JsonObject): Set<string> {
  const items = isObject(schema.properties) ? schema.properties.configs : null;
  const mapping = isObject(items) && isObject(items.items) ? items.items.discriminator : null;
  // Empty when the schema has no discriminator: any "type" is sent, and the API judges it.
  return new Set(isObject(mapping) && isObject(mapping.mapping) ? Object.keys(mapping.mapping) : []);
}

export function SensitivityForm({ projectId, schema }: { projectId: string; schema: JsonObject }) {
  const id = useId();
  const models = useModels(projectId).data ?? [];
  const datasets = useDatasets(projectId).data ?? [];
  const create = useCreateJob(projectId);
  const defaults = useMemo(() => configDefaults(schema), [schema]);
  const types = useMemo(() => configTypes(schema), [schema]);
  const params = useMemo(
    () =>
      Object.keys(NUMERIC)
        .map((name) => numericParam(schema, name))
        .filter((p): p is NumericParam => p !== null),
    [schema],
  );
  const [model, setModel] = useState("");
  const [dataset, setDataset] = useState("");
  const [configs, setConfigs] = useState<Config[]>(() => presetConfigs(DEFAULT_PRESET_IDS));
  const [json, setJson] = useState<{ open: boolean; text: string; error: string | null }>(() => ({
    open: false,
    text: formatConfigs(presetConfigs(DEFAULT_PRESET_IDS)),
    error: null,
  }));
  const [allBut, setAllBut] = useState(false);
  const [wholeModel, setWholeModel] = useState(true);
  const [bits, setBits] = useState(DEFAULT_BITS);
  const [methods, setMethods] = useState<string[]>(DEFAULT_METHODS);
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(params.map((p) => [p.name, p.default === null ? "" : String(p.default)])),
  );
  const [problem, setProblem] = useState<string | null>(null);

  const setFromPresets = (next: Config[]) => {
    setConfigs(next);
    setJson((old) => ({ ...old, text: formatConfigs(next), error: null }));
  };
  const editJson = (text: string) => {
    const parsed = parseConfigs(text, types);
    if (typeof parsed === "string") setJson((old) => ({ ...old, text, error: parsed }));
    else {
      setJson((old) => ({ ...old, text, error: null }));
      setConfigs(parsed);
    }
  };
  const custom = configs.filter((c) => !PRESETS.some((p) => hasConfig([c], p.config, defaults)));

  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (json.error) {
      setProblem(`The configurations' JSON: ${json.error}`);
      return;
    }
    if (configs.length === 0) {
      setProblem("Choose at least one configuration.");
      return;
    }
    const averageBits = parseBits(bits);
    if (typeof averageBits === "string") {
      setProblem(averageBits);
      return;
    }
    const body: Record<string, unknown> = {
      model_id: model,
      dataset_id: dataset,
      configs,
      all_but: allBut,
      whole_model: wholeModel,
      mixed_precision_bits: averageBits,
      importance_methods: methods,
    };
    for (const param of params) {
      const parsed = parseParam(param, values[param.name] ?? "");
      if (typeof parsed === "string") {
        setProblem(parsed);
        return;
      }
      if (parsed !== null) body[param.name] = parsed;
    }
    setProblem(null);
    create.mutate({ kind: "sensitivity", params: body });
  };

  const numberField = (name: keyof typeof NUMERIC) => {
    const param = params.find((p) => p.name === name);
    return (
      param && (
        <NumberField
          param={param}
          label={NUMERIC[name] + (param.nullable ? " (blank: automatic)" : "")}
          value={values[name] ?? ""}
          required={!param.nullable}
          onChange={(v) => {
            setValues((old) => ({ ...old, [name]: v }));
          }}
        />
      )
    );
  };

  return (
    <form onSubmit={submit} aria-labelledby="launch-heading" className="sensitivity-form">
      <div className="launch-grid">
        <ModelSelect label="Model" models={models} value={model} onChange={setModel} />
        <DatasetSelect datasets={datasets} value={dataset} onChange={setDataset} />
        {numberField("max_samples")}
      </div>

      <fieldset className="fields presets">
        <legend>
          Configurations <span className="muted small-text">({configs.length} chosen: the heatmap&apos;s columns)</span>
        </legend>
        <div className="chips">
          {PRESETS.map((preset) => (
            <label key={preset.id} className="chip" title={preset.title}>
              <input
                type="checkbox"
                checked={hasConfig(configs, preset.config, defaults)}
                disabled={json.error !== null}
                onChange={() => {
                  setFromPresets(togglePreset(configs, preset, defaults));
                }}
              />
              {preset.label}
            </label>
          ))}
          <button
            type="button"
            className="small"
            aria-expanded={json.open}
            aria-controls={`${id}-json`}
            onClick={() => {
              setJson((old) => ({ ...old, open: !old.open }));
            }}
          >
            {json.open ? "Hide JSON" : "Edit as JSON"}
          </button>
        </div>
        {custom.length > 0 && (
          <p className="muted small-text">Not among the presets: {custom.map((c) => describeConfig(c)).join("; ")}.</p>
        )}
        {json.open && (
          <label id={`${id}-json`} className="json-editor">
            Configurations (JSON)
            <textarea
              rows={Math.min(12, Math.max(4, json.text.split("\n").length + 1))}
              value={json.text}
              spellCheck={false}
              aria-invalid={json.error !== null}
              aria-describedby={`${id}-json-help`}
              onChange={(e) => {
                editJson(e.target.value);
              }}
            />
            <span id={`${id}-json-help`} className={json.error ? "error small-text" : "muted small-text"}>
              {json.error ??
                `A list of {"type": …} objects; types: ${[...types].join(", ")}. Unset fields take the API's defaults.`}
            </span>
          </label>
        )}
      </fieldset>

      <div className="launch-grid">
        <label>
          Mixed-precision average bits
          <input
            type="text"
            inputMode="decimal"
            value={bits}
            onChange={(e) => {
              setBits(e.target.value);
            }}
          />
          <span className="muted small-text">
            Comma-separated; empty for no plan. {describeParam(schema, "mixed_precision_bits")}
          </span>
        </label>
        <div className="checks">
          <label className="inline">
            <input
              type="checkbox"
              checked={allBut}
              onChange={(e) => {
                setAllBut(e.target.checked);
              }}
            />
            All-but view
          </label>
          <span className="muted small-text">{describeParam(schema, "all_but")} Doubles the work.</span>
          <label className="inline">
            <input
              type="checkbox"
              checked={wholeModel}
              onChange={(e) => {
                setWholeModel(e.target.checked);
              }}
            />
            Whole model per configuration
          </label>
        </div>
        <fieldset className="fields checks">
          <legend>Channel importance</legend>
          {METHODS.map((m) => (
            <label key={m.id} className="inline">
              <input
                type="checkbox"
                checked={methods.includes(m.id)}
                onChange={(e) => {
                  setMethods((old) =>
                    e.target.checked
                      ? METHODS.map((x) => x.id).filter((x) => x === m.id || old.includes(x))
                      : old.filter((x) => x !== m.id),
                  );
                }}
              />
              {m.label}
            </label>
          ))}
        </fieldset>
      </div>

      <details className="more-settings">
        <summary>More settings</summary>
        <div className="launch-grid">
          {numberField("batch_size")}
          {numberField("chunks")}
        </div>
      </details>

      <div className="actions">
        <button type="submit" disabled={create.isPending}>
          Launch
        </button>
        {create.isSuccess && <Queued jobId={create.data.id} kind="sensitivity" />}
      </div>
      {problem && <p className="warning">{problem}</p>}
      {create.isError && <ErrorMessage error={create.error} />}
    </form>
  );
}
