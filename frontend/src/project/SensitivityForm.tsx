// The sensitivity launcher: a model and the samples measured, the compression configurations (presets to tick,
// or the raw JSON for experts, kept in step), the all-but view, mixed-precision average bit-widths, channel
// importance methods, the calibration set of activation quantizers (CalibrationFields), the task the cells are
// scored on and ranked by, with its cost before launch (SensitivityTaskFields), and the scan's size.
// Defaults and bounds come from SensitivityJobParams' schema.
import { useMemo, useState, type SubmitEvent } from "react";
import { useDatasets } from "../api/datasets";
import { useCreateJob } from "../api/jobs";
import { useModels } from "../api/models";
import { Checkbox } from "../components/Checkbox";
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
import { inspectedLayerCount, taskScanCost } from "../lib/sensitivityTask";
import { chosenCalibrationSet, quantizesActivations } from "../lib/sweepCalibration";
import { parseTaskOptions } from "../lib/sweepTask";
import { CalibrationFields } from "./CalibrationFields";
import { TextField, describeParam } from "./fields";
import { ConfigsFieldset, LaunchRow, ModelAndDataset, MoreSettings, useConfigs, useNumericFields } from "./launchParts";
import { NO_SCAN_TASK, SensitivityTaskFields, type ScanTaskChoice } from "./SensitivityTaskFields";

const NUMERIC = {
  max_samples: "Samples measured",
  calibration_samples: "Calibration samples",
  batch_size: "Batch size",
  chunks: "Chunks",
} as const;
const METHODS = [
  { id: "l1", label: "L1 norm" },
  { id: "l2", label: "L2 norm" },
  { id: "taylor", label: "Taylor (torch models)" },
  { id: "reconstruction", label: "Reconstruction" },
] as const;
const DEFAULT_METHODS = ["l1", "l2"];
const DEFAULT_BITS = "6, 5";

export function SensitivityForm({ projectId, schema }: { projectId: string; schema: JsonObject }) {
  const create = useCreateJob(projectId);
  const defaults = useMemo(() => configDefaults(schema), [schema]);
  const types = useMemo(() => configTypes(schema), [schema]);
  const numbers = useNumericFields(schema, NUMERIC);
  const [model, setModel] = useState("");
  const [dataset, setDataset] = useState("");
  const editor = useConfigs(
    () => presetConfigs(DEFAULT_PRESET_IDS),
    (text) => parseConfigs(text, types),
  );
  const [allBut, setAllBut] = useState(false);
  const [wholeModel, setWholeModel] = useState(true);
  const [bits, setBits] = useState(DEFAULT_BITS);
  const [methods, setMethods] = useState<string[]>(DEFAULT_METHODS);
  const [problem, setProblem] = useState<string | null>(null);
  const [calibration, setCalibration] = useState("");
  const [task, setTask] = useState<ScanTaskChoice>(NO_SCAN_TASK);
  const datasets = useDatasets(projectId).data ?? [];
  const models = useModels(projectId).data ?? [];
  const { configs } = editor;
  // activation ranges are calibrated on samples the scan does not measure (a calibration set, or held out)
  const calibrates = configs.some(quantizesActivations);
  const calibrationSet = chosenCalibrationSet(datasets, dataset, calibration, calibrates);

  const measured = Number(numbers.value("max_samples"));
  const available = datasets.find((d) => d.id === dataset)?.n_samples;
  const cost = taskScanCost({
    task: task.task,
    rankBy: task.rankBy,
    layers: inspectedLayerCount(models.find((m) => m.id === model)),
    configs: configs.length,
    samples:
      Number.isInteger(measured) && measured > 0 ? Math.min(measured, available ?? measured) : (available ?? null),
    allBut,
  });

  const custom = configs.filter((c) => !PRESETS.some((p) => hasConfig([c], p.config, defaults)));

  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (editor.jsonProblem) {
      setProblem(editor.jsonProblem);
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
    if (calibrationSet) body.calibration_dataset_id = calibrationSet.id;
    if (task.task !== "auto" || task.rankBy) {
      const options = parseTaskOptions(task.options);
      if (typeof options === "string") {
        setProblem(options);
        return;
      }
      body.task = task.task;
      if (task.task !== "auto") body.task_options = options;
      if (task.rankBy) body.rank_by = task.rankBy;
    }
    const wrong = numbers.collect(body);
    if (!calibrates) delete body.calibration_samples; // nothing is calibrated: the API would refuse it
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

      <ConfigsFieldset
        summary={<>({configs.length} chosen: the heatmap&apos;s columns)</>}
        presets={PRESETS}
        ticked={(preset) => hasConfig(configs, preset.config, defaults)}
        onToggle={(preset) => {
          editor.setFromPresets(togglePreset(configs, preset, defaults));
        }}
        editor={editor}
        custom={custom}
        maxRows={12}
        help={`A list of {"type": …} objects; types: ${[...types].join(", ")}. Unset fields take the API's defaults.`}
      />

      <SensitivityTaskFields schema={schema} value={task} cost={cost} onChange={setTask} />

      <div className="launch-grid">
        <TextField
          label="Mixed-precision average bits"
          inputMode="decimal"
          value={bits}
          onChange={setBits}
          help={<>Comma-separated; empty for no plan. {describeParam(schema, "mixed_precision_bits")}</>}
        />
        <div className="checks">
          <Checkbox checked={allBut} onChange={setAllBut}>
            All-but view
          </Checkbox>
          <span className="muted small-text">{describeParam(schema, "all_but")} Doubles the work.</span>
          <Checkbox checked={wholeModel} onChange={setWholeModel}>
            Whole model per configuration
          </Checkbox>
        </div>
        <CalibrationFields
          datasets={datasets}
          evaluation={dataset}
          value={calibration}
          onChange={setCalibration}
          calibrates={calibrates}
          samples={numbers.field("calibration_samples", !calibrates)}
          what="measured"
        />
        <fieldset className="fields checks">
          <legend>Channel importance</legend>
          {METHODS.map((m) => (
            <Checkbox
              key={m.id}
              checked={methods.includes(m.id)}
              onChange={(checked) => {
                setMethods((old) =>
                  checked
                    ? METHODS.map((x) => x.id).filter((x) => x === m.id || old.includes(x))
                    : old.filter((x) => x !== m.id),
                );
              }}
            >
              {m.label}
            </Checkbox>
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
