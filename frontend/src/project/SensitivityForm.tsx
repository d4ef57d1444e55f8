// The sensitivity launcher: a model and a calibration set, the compression configurations (presets to tick,
// or the raw JSON for experts, kept in step), the all-but view, mixed-precision average bit-widths, channel
// importance methods and the scan's size. Defaults and bounds come from SensitivityJobParams' schema.
import { useId, useMemo, useState, type SubmitEvent } from "react";
import { useCreateJob } from "../api/jobs";
import type { JsonObject } from "../lib/json";
import {
  DEFAULT_PRESET_IDS,
  PRESETS,
  configDefaults,
  configTypes,
  hasConfig,
  parseBits,
  parseConfigs,
  presetConfigs,
  togglePreset,
} from "../lib/sensitivityParams";
import { describeParam } from "./fields";
import {
  ConfigsJson,
  JsonToggle,
  LaunchRow,
  ModelAndDataset,
  MoreSettings,
  NotAmongPresets,
  PresetChips,
  useConfigs,
  useNumericFields,
} from "./launchParts";

const NUMERIC = { max_samples: "Calibration samples", batch_size: "Batch size", chunks: "Chunks" } as const;
const METHODS = [
  { id: "l1", label: "L1 norm" },
  { id: "l2", label: "L2 norm" },
  { id: "taylor", label: "Taylor (torch models)" },
  { id: "reconstruction", label: "Reconstruction" },
] as const;
const DEFAULT_METHODS = ["l1", "l2"];
const DEFAULT_BITS = "6, 5";

export function SensitivityForm({ projectId, schema }: { projectId: string; schema: JsonObject }) {
  const id = useId();
  const create = useCreateJob(projectId);
  const defaults = useMemo(() => configDefaults(schema), [schema]);
  const types = useMemo(() => configTypes(schema), [schema]);
  const numbers = useNumericFields(schema, NUMERIC);
  const [model, setModel] = useState("");
  const [dataset, setDataset] = useState("");
  const { configs, json, setFromPresets, editJson, toggleJson } = useConfigs(
    () => presetConfigs(DEFAULT_PRESET_IDS),
    (text) => parseConfigs(text, types),
  );
  const [allBut, setAllBut] = useState(false);
  const [wholeModel, setWholeModel] = useState(true);
  const [bits, setBits] = useState(DEFAULT_BITS);
  const [methods, setMethods] = useState<string[]>(DEFAULT_METHODS);
  const [problem, setProblem] = useState<string | null>(null);

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
    const wrong = numbers.collect(body);
    setProblem(wrong);
    if (wrong === null) create.mutate({ kind: "sensitivity", params: body });
  };

  return (
    <form onSubmit={submit} aria-labelledby="launch-heading" className="sensitivity-form">
      <ModelAndDataset
        projectId={projectId}
        model={model}
        dataset={dataset}
        onModel={setModel}
        onDataset={setDataset}
        samples={numbers.field("max_samples")}
      />

      <fieldset className="fields presets">
        <legend>
          Configurations <span className="muted small-text">({configs.length} chosen: the heatmap&apos;s columns)</span>
        </legend>
        <PresetChips
          presets={PRESETS}
          ticked={(preset) => hasConfig(configs, preset.config, defaults)}
          onToggle={(preset) => {
            setFromPresets(togglePreset(configs, preset, defaults));
          }}
          disabled={json.error !== null}
          toggle={<JsonToggle id={id} open={json.open} onToggle={toggleJson} />}
        />
        <NotAmongPresets custom={custom} />
        {json.open && (
          <ConfigsJson
            id={id}
            json={json}
            maxRows={12}
            help={`A list of {"type": …} objects; types: ${[...types].join(", ")}. Unset fields take the API's defaults.`}
            onEdit={editJson}
          />
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

      <MoreSettings>
        {numbers.field("batch_size")}
        {numbers.field("chunks")}
      </MoreSettings>

      <LaunchRow kind="sensitivity" create={create} problem={problem} />
    </form>
  );
}
