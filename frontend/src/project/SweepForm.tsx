// The sweep launcher: a golden model and a dataset, the whole-model configurations (presets with the API's
// defaults ticked, or the raw JSON, kept in step), optionally the mixed-precision plans of a succeeded
// sensitivity scan of the same model, latency timing (batch sizes, repeats), the export of each point and the
// task the points are scored on (SweepTaskFields: its metrics become frontier axes and bounds).
// Defaults and bounds come from SweepJobParams' schema in GET /job-kinds.
import { useMemo, useState, type SubmitEvent } from "react";
import { useDatasets } from "../api/datasets";
import { useCreateJob } from "../api/jobs";
import { useSensitivityJobs } from "../api/sensitivity";
import { Checkbox } from "../components/Checkbox";
import { formatTime } from "../lib/format";
import { isObject, type JsonObject } from "../lib/json";
import { configTypes, parseBits, parseConfigs, togglePresetIn, type Config } from "../lib/sensitivityParams";
import {
  DEFAULT_SWEEP_PRESET_IDS,
  MAX_SWEEP_CONFIGS,
  SWEEP_PRESETS,
  canonicalDeep,
  configSchema,
  parseBatchSizes,
  sweepPresetConfigs,
} from "../lib/sweepParams";
import { chosenCalibrationSet, quantizesActivations } from "../lib/sweepCalibration";
import { parseTaskOptions, taskFrontier, taskMetrics } from "../lib/sweepTask";
import { CalibrationFields } from "./CalibrationFields";
import { TextField, describeParam } from "./fields";
import { ConfigsFieldset, LaunchRow, ModelAndDataset, MoreSettings, useConfigs, useNumericFields } from "./launchParts";
import { NO_SEARCH, searchParams, type SearchChoice } from "../lib/sweepSearch";
import { SweepSearchFields } from "./SweepSearchFields";
import { NO_TASK, SweepTaskFields, type TaskChoice } from "./SweepTaskFields";

const NUMERIC = {
  max_samples: "Evaluation samples",
  calibration_samples: "Calibration samples",
  batch_size: "Batch size",
  latency_repeats: "Timing repeats",
  threads: "Threads",
} as const;
const DEFAULT_BITS = "6, 5";
const DEFAULT_BATCHES = "1, 32";

const boolDefault = (schema: JsonObject, name: string, fallback: boolean): boolean => {
  const property = isObject(schema.properties) ? schema.properties[name] : null;
  return isObject(property) && typeof property.default === "boolean" ? property.default : fallback;
};

/** The task, its options and the frontier it opens with, into the request body; else why not. */
function addTask(body: Record<string, unknown>, choice: TaskChoice, schema: JsonObject): string | null {
  if (choice.task === "auto") return null;
  const options = parseTaskOptions(choice.options);
  if (typeof options === "string") return options;
  body.task = choice.task;
  body.task_options = options;
  const direction = taskMetrics(schema)[choice.task]?.[choice.metric];
  if (!direction) return null;
  const frontier = taskFrontier(choice.metric, direction, choice.limit);
  if (typeof frontier === "string") return frontier;
  body.objectives = frontier.objectives;
  body.bounds = frontier.bounds;
  return null;
}

export function SweepForm({ projectId, schema }: { projectId: string; schema: JsonObject }) {
  const scans = useSensitivityJobs(projectId);
  const create = useCreateJob(projectId);
  const shape = useMemo(() => configSchema(schema), [schema]);
  const key = useMemo(() => (c: Config) => canonicalDeep(c, shape), [shape]);
  const types = useMemo(() => configTypes(schema), [schema]);
  const numbers = useNumericFields(schema, NUMERIC);
  const [model, setModel] = useState("");
  const [dataset, setDataset] = useState("");
  const editor = useConfigs(
    () => sweepPresetConfigs(DEFAULT_SWEEP_PRESET_IDS),
    (text) => parseConfigs(text, types, { max: MAX_SWEEP_CONFIGS, allowEmpty: true }),
  );
  const [scan, setScan] = useState("");
  const [bits, setBits] = useState(DEFAULT_BITS);
  const [latency, setLatency] = useState(() => boolDefault(schema, "latency", true));
  const [memory, setMemory] = useState(() => boolDefault(schema, "memory", true));
  const [batches, setBatches] = useState(DEFAULT_BATCHES);
  const [exported, setExported] = useState(() => boolDefault(schema, "export", true));
  const [task, setTask] = useState<TaskChoice>(NO_TASK);
  const [search, setSearch] = useState<SearchChoice>(NO_SEARCH);
  const [problem, setProblem] = useState<string | null>(null);
  const [calibration, setCalibration] = useState("");
  const datasets = useDatasets(projectId).data ?? [];
  const { configs } = editor;

  // Mixed precision plans come from a succeeded scan of the same model.
  const sameModel = (scans.data?.items ?? []).filter((j) => j.params.model_id === model);
  const chosenScan = sameModel.some((j) => j.id === scan) ? scan : "";
  const searchChoice = sameModel.some((j) => j.id === search.scan) ? search : { ...search, scan: "" };

  // Activation ranges are calibrated on samples the sweep does not evaluate (a calibration set, or held out).
  const scanConfigs = sameModel.find((j) => j.id === chosenScan)?.params.configs;
  const calibrates =
    configs.some(quantizesActivations) || (Array.isArray(scanConfigs) && scanConfigs.some(quantizesActivations));
  const calibrationSet = chosenCalibrationSet(datasets, dataset, calibration, calibrates);

  const presetKeys = useMemo(() => new Set(SWEEP_PRESETS.map((p) => key(p.config))), [key]);
  const chosen = new Set(configs.map(key));
  const custom = configs.filter((c) => !presetKeys.has(key(c)));

  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    if (editor.jsonProblem) {
      setProblem(editor.jsonProblem);
      return;
    }
    const body: Record<string, unknown> = {
      model_id: model,
      dataset_id: dataset,
      configs,
      latency,
      memory,
      export: exported,
    };
    if (calibrationSet) body.calibration_dataset_id = calibrationSet.id;
    if (chosenScan) {
      const averageBits = parseBits(bits, 16);
      if (typeof averageBits === "string") {
        setProblem(averageBits);
        return;
      }
      if (averageBits.length === 0) {
        setProblem("Give at least one average bit-width for the mixed-precision plans.");
        return;
      }
      body.mixed_precision = { sensitivity_job_id: chosenScan, average_bits: averageBits };
    }
    const searched = searchParams(searchChoice);
    if (typeof searched === "string") {
      setProblem(searched);
      return;
    }
    if (searched) body.search = searched;
    if (configs.length === 0 && !chosenScan && !searched) {
      setProblem("Choose at least one configuration, a sensitivity scan to plan mixed precision from, or a search.");
      return;
    }
    if (latency) {
      const sizes = parseBatchSizes(batches);
      if (typeof sizes === "string") {
        setProblem(sizes);
        return;
      }
      body.latency_batch_sizes = sizes;
    }
    const taskProblem = addTask(body, task, schema);
    if (taskProblem !== null) {
      setProblem(taskProblem);
      return;
    }
    const wrong = numbers.collect(body);
    if (!calibrates) delete body.calibration_samples; // nothing is calibrated: the API would refuse it
    setProblem(wrong);
    if (wrong === null) create.mutate({ kind: "sweep", params: body });
  };

  const plans = parseBits(bits, 16);
  const points = configs.length + 1 + (chosenScan && typeof plans !== "string" ? plans.length : 0);
  return (
    <form onSubmit={submit} aria-labelledby="launch-heading" className="sensitivity-form sweep-form">
      <ModelAndDataset
        projectId={projectId}
        model={model}
        dataset={dataset}
        onModel={setModel}
        onDataset={setDataset}
        samples={numbers.field("max_samples")}
      />

      <ConfigsFieldset
        summary={
          <>
            ({configs.length} chosen, each applied to the whole model; {points} points with fp32
            {chosenScan ? " and the plans" : ""})
          </>
        }
        presets={SWEEP_PRESETS}
        ticked={(preset) => chosen.has(key(preset.config))}
        onToggle={(preset) => {
          editor.setFromPresets(togglePresetIn(configs, preset, SWEEP_PRESETS, key));
        }}
        editor={editor}
        custom={custom}
        maxRows={14}
        help={`A list of {"type": …} objects (at most ${MAX_SWEEP_CONFIGS.toString()}); types: ${[...types].join(", ")}. "quantize" takes "weights" and "activations". Unset fields take the API's defaults.`}
      >
        <p className="muted small-text">
          Ticked: the API&apos;s default sweep. W8A8, W8 and fp16 have real ONNX Runtime forms (int8 QDQ, int8 weights,
          fp16); 4-bit and 16-bit activations are simulated only.
        </p>
      </ConfigsFieldset>

      <div className="launch-grid">
        <fieldset className="fields">
          <legend>Mixed precision (optional)</legend>
          <label>
            Plans from a sensitivity scan
            <select
              value={chosenScan}
              onChange={(e) => {
                setScan(e.target.value);
              }}
              disabled={!model}
            >
              <option value="">
                {!model
                  ? "Choose the model first"
                  : sameModel.length
                    ? "None"
                    : "None (no succeeded scan of this model)"}
              </option>
              {sameModel.map((j) => (
                <option key={j.id} value={j.id}>
                  scan {j.id.slice(0, 6)} · {Array.isArray(j.params.configs) ? j.params.configs.length : "?"} configs ·{" "}
                  {formatTime(j.finished_at)}
                </option>
              ))}
            </select>
            <span className="muted small-text">{describeParam(schema, "mixed_precision")}</span>
          </label>
          <TextField
            label="Average bits"
            inputMode="decimal"
            value={bits}
            disabled={!chosenScan}
            onChange={setBits}
            help="Comma-separated; one point per budget."
          />
        </fieldset>
        <CalibrationFields
          datasets={datasets}
          evaluation={dataset}
          value={calibration}
          onChange={setCalibration}
          calibrates={calibrates}
          samples={numbers.field("calibration_samples", !calibrates)}
          what="evaluated"
        />
        <fieldset className="fields">
          <legend>Latency</legend>
          <Checkbox checked={latency} onChange={setLatency}>
            Time each point&apos;s ONNX file
          </Checkbox>
          <TextField
            label="Batch sizes"
            inputMode="numeric"
            value={batches}
            disabled={!latency}
            onChange={setBatches}
            help="Comma-separated, 1 to 4 of them."
          />
          {numbers.field("latency_repeats", !latency)}
          <Checkbox checked={memory} onChange={setMemory}>
            Measure each point&apos;s run-time memory
          </Checkbox>
        </fieldset>
        <fieldset className="fields">
          <legend>Export</legend>
          <Checkbox checked={exported} onChange={setExported}>
            Store each point&apos;s model (ONNX)
          </Checkbox>
          <span className="muted small-text">
            {describeParam(schema, "export")} Without it there is no latency either (nothing to time).
          </span>
        </fieldset>
      </div>

      <SweepSearchFields model={model} scans={sameModel} value={searchChoice} onChange={setSearch} />

      <SweepTaskFields schema={schema} value={task} onChange={setTask} />

      <MoreSettings>
        {numbers.field("batch_size")}
        {numbers.field("threads")}
      </MoreSettings>

      <LaunchRow kind="sweep" create={create} problem={problem} />
    </form>
  );
}
