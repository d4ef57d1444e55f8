// The recovery launcher (the project's launch panel, and a model's page with its model fixed): a golden model
// recovery runs on (.pt2 or ONNX), a dataset, the configuration to recover (a weight-quantization preset), the
// methods with their settings (MethodChooser: AdaRound's iterations, SmoothQuant's α, the training steps…),
// the held-out share and the samples used, and optionally the task scored before and after recovery (its mapping
// is checked by the API at launch). Launches POST /recovery-jobs; the queued job links to its page.
import { useState, type SubmitEvent } from "react";
import { useDatasets } from "../api/datasets";
import { useSweepSchema } from "../api/jobs";
import { useModels } from "../api/models";
import { ErrorMessage } from "../components/QueryView";
import { isObject } from "../lib/json";
import { DatasetSelect, ModelSelect, Queued } from "../project/fields";
import { fidelityTask, NO_FIDELITY_TASK } from "../project/fidelityTask";
import { TaskChoiceFields } from "../project/TaskChoiceFields";
import { MoreSettings } from "../project/launchParts";
import { DEFAULT_RECOVERY_PRESET, RECOVERY_PRESETS, recoverableModels, recoveryParams } from "./launch";
import { MethodChooser } from "./MethodChooser";
import { useCreateRecovery } from "./queries";
import { defaultChoice, methodsFor, type MethodChoice } from "./training";

export function RecoveryForm({ projectId, modelId }: { projectId: string; modelId?: string }) {
  const models = recoverableModels(useModels(projectId).data ?? []);
  const datasets = useDatasets(projectId).data ?? [];
  const create = useCreateRecovery(projectId);
  const [model, setModel] = useState(modelId ?? "");
  const [dataset, setDataset] = useState("");
  const [preset, setPreset] = useState(DEFAULT_RECOVERY_PRESET);
  const [heldout, setHeldout] = useState("0.3");
  const [samples, setSamples] = useState("2048");
  const [name, setName] = useState("");
  const format = models.find((m) => m.id === model)?.format;
  const [choice, setChoice] = useState<MethodChoice>(() => defaultChoice(format ?? "torch_export"));
  const [task, setTask] = useState(NO_FIDELITY_TASK);
  const schema = useSweepSchema();
  const [problem, setProblem] = useState<string | null>(null);
  const available = methodsFor(format ?? "torch_export");

  const chooseModel = (id: string) => {
    setModel(id);
    setChoice(defaultChoice(models.find((m) => m.id === id)?.format ?? "torch_export"));
  };
  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const params = recoveryParams({
      modelId: model,
      datasetId: dataset,
      presetId: preset,
      heldout,
      samples,
      name,
      choice,
      task: fidelityTask(task),
    });
    if (typeof params === "string") {
      setProblem(params);
      return;
    }
    setProblem(null);
    create.mutate(params as Parameters<typeof create.mutate>[0]);
  };

  return (
    <form onSubmit={submit} aria-label="Launch a recovery job" className="recovery-launch">
      <div className="launch-grid">
        {modelId === undefined && (
          <ModelSelect label="Golden model" models={models} value={model} onChange={chooseModel} />
        )}
        <DatasetSelect datasets={datasets} value={dataset} onChange={setDataset} />
        <label title="The compression whose lost fidelity the methods recover">
          Configuration to recover
          <select
            value={preset}
            onChange={(e) => {
              setPreset(e.target.value);
            }}
          >
            {RECOVERY_PRESETS.map((p) => (
              <option key={p.id} value={p.id} title={p.title}>
                {p.label}: {p.title}
              </option>
            ))}
          </select>
        </label>
      </div>
      <MethodChooser choice={choice} onChange={setChoice} available={available} />
      {isObject(schema) && (
        <fieldset className="fields">
          <legend>Task (optional)</legend>
          <TaskChoiceFields
            schema={schema}
            task={task.task}
            options={task.options}
            optionsHelp='Scored on the held-out samples before and after recovery, e.g. {"ignore_index": 255}.'
            onChange={(change) => {
              setTask({ ...task, ...change });
            }}
          />
        </fieldset>
      )}
      <MoreSettings>
        <label>
          Held-out share
          <input
            type="number"
            inputMode="decimal"
            step="any"
            min={0.05}
            max={0.9}
            value={heldout}
            onChange={(e) => {
              setHeldout(e.target.value);
            }}
          />
          <span className="muted small-text">of the samples, measured before and after; the rest calibrates</span>
        </label>
        <label>
          Samples
          <input
            type="number"
            inputMode="numeric"
            step={1}
            min={4}
            value={samples}
            onChange={(e) => {
              setSamples(e.target.value);
            }}
          />
          <span className="muted small-text">the dataset's first ones (calibration + held out)</span>
        </label>
        <label>
          Name of the recovered model
          <input
            type="text"
            maxLength={200}
            placeholder="golden · configuration · methods"
            value={name}
            onChange={(e) => {
              setName(e.target.value);
            }}
          />
        </label>
      </MoreSettings>
      <div className="actions">
        <button type="submit" disabled={create.isPending}>
          Launch recovery
        </button>
        {create.isSuccess && <Queued jobId={create.data.id} kind="recovery" />}
      </div>
      {problem && <p className="warning">{problem}</p>}
      {create.isError && <ErrorMessage error={create.error} />}
    </form>
  );
}
