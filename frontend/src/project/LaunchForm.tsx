// The job launcher (a recovery job too: RecoveryForm): a fidelity job (golden vs compressed; optionally a calibration set, robustness slices
// with an out-of-distribution set and a PyTorch twin of an ONNX golden model), a sensitivity scan (which layers of one model
// tolerate which compression) or a sweep (whole-model configurations on a Pareto frontier). Models and datasets come from the project; numeric parameters (defaults,
// bounds, help) and the compression configs' defaults from the kind's schema in GET /job-kinds.
import { useState, type SubmitEvent } from "react";
import { useDatasets } from "../api/datasets";
import { useCreateJob, useJobKinds } from "../api/jobs";
import { useModels } from "../api/models";
import { ErrorMessage, Loading } from "../components/QueryView";
import { isObject, type JsonObject } from "../lib/json";
import { numericParam, parseParam, type NumericParam } from "../lib/paramSchema";
import { DatasetSelect, ModelSelect, NumberField, Queued } from "./fields";
import { eligibleTwins, fidelityOptions, isOnnx, isPyTorch } from "./fidelityOptions";
import { fidelityTask, NO_FIDELITY_TASK } from "./fidelityTask";
import { FidelityTaskFields } from "./FidelityTaskFields";
import { RobustnessFields } from "./RobustnessFields";
import { SEVERITIES, SLICE_LABELS, robustnessChoice, sliceOffers, type RobustnessSlice } from "./robustnessSlices";
import { SensitivityForm } from "./SensitivityForm";
import { SweepForm } from "./SweepForm";
import { RecoveryForm } from "../recovery/RecoveryForm";

/** The numeric parameters the fidelity form offers, with their labels; the rest keep the API's defaults. */
const FIDELITY_NUMERIC = {
  top_k: "Top-k",
  threshold_kl: "KL threshold (nats)",
  batch_size: "Batch size",
  calibration_samples: "Calibration samples",
} as const;

type Kind = "fidelity" | "sensitivity" | "sweep" | "recovery";
const KINDS: { kind: Kind; label: string }[] = [
  { kind: "fidelity", label: "Fidelity" },
  { kind: "sensitivity", label: "Sensitivity" },
  { kind: "sweep", label: "Sweep" },
  { kind: "recovery", label: "Recovery" },
];
// Recovery has its own route (POST /recovery-jobs), not a kind of GET /job-kinds: its form is typed from the spec.
const RECOVERY_DESCRIPTION =
  "Recover the fidelity a compression configuration loses (equalization, SmoothQuant, AdaRound, distillation, " +
  "QAT, bias correction, in that order) and store the recovered model with a before/after report on a held-out split.";

function FidelityForm({ projectId, schema }: { projectId: string; schema: JsonObject }) {
  const params = Object.keys(FIDELITY_NUMERIC)
    .map((name) => numericParam(schema, name))
    .filter((p): p is NumericParam => p !== null);
  const labelOf = (name: string) => Object.entries(FIDELITY_NUMERIC).find(([key]) => key === name)?.[1] ?? name;
  const models = useModels(projectId).data ?? [];
  const datasets = useDatasets(projectId).data ?? [];
  const create = useCreateJob(projectId);
  const [golden, setGolden] = useState("");
  const [compressed, setCompressed] = useState("");
  const [dataset, setDataset] = useState("");
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(params.map((p) => [p.name, p.default === null ? "" : String(p.default)])),
  );
  const [problem, setProblem] = useState<string | null>(null);
  const [robustness, setRobustness] = useState(false);
  const [ood, setOod] = useState("");
  const [twin, setTwin] = useState("");
  const [calibration, setCalibration] = useState("");
  const [slices, setSlices] = useState<Set<RobustnessSlice>>(
    () => new Set(Object.keys(SLICE_LABELS) as RobustnessSlice[]),
  );
  const [severities, setSeverities] = useState<Set<number>>(() => new Set(SEVERITIES));
  const [task, setTask] = useState(NO_FIDELITY_TASK);
  const goldenIsOnnx = isOnnx(models.find((m) => m.id === golden));
  const twins = eligibleTwins(models, golden);
  const attacks = isPyTorch(models.find((m) => m.id === golden)) || twins.some((m) => m.id === twin);
  const offers = sliceOffers(
    datasets.find((d) => d.id === dataset),
    attacks,
  );

  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const chosen = robustness ? robustnessChoice(offers, slices, severities, ood !== "") : undefined;
    if (typeof chosen === "string") {
      setProblem(chosen);
      return;
    }
    const scored = fidelityTask(task);
    if (typeof scored === "string") {
      setProblem(scored);
      return;
    }
    const body: Record<string, unknown> = {
      golden_model_id: golden,
      compressed_model_id: compressed,
      dataset_id: dataset,
      ...fidelityOptions({ calibration, robustness, ood, twin, slices: chosen }, models, golden),
      ...scored,
    };
    for (const param of params) {
      const parsed = parseParam(param, values[param.name] ?? "");
      if (typeof parsed === "string") {
        setProblem(parsed);
        return;
      }
      body[param.name] = parsed;
    }
    setProblem(golden === compressed ? "Golden and compressed are the same model: every divergence will be 0." : null);
    create.mutate({ kind: "fidelity", params: body });
  };

  return (
    <form onSubmit={submit} aria-labelledby="launch-heading">
      <div className="launch-grid">
        <ModelSelect label="Golden model" models={models} value={golden} onChange={setGolden} />
        <ModelSelect label="Compressed model" models={models} value={compressed} onChange={setCompressed} />
        <DatasetSelect datasets={datasets} value={dataset} onChange={setDataset} />
        {/* the set the compressed model was calibrated on: the layer profile reports per layer the share of
            the dataset's golden activations outside the range seen on it */}
        <DatasetSelect
          label="Calibration set (optional)"
          optional
          datasets={datasets}
          value={calibration}
          onChange={setCalibration}
        />
        {params.map((p) => (
          <NumberField
            key={p.name}
            param={p}
            label={labelOf(p.name)}
            value={values[p.name] ?? ""}
            onChange={(v) => {
              setValues((old) => ({ ...old, [p.name]: v }));
            }}
          />
        ))}
      </div>
      <FidelityTaskFields schema={schema} models={models} value={task} onChange={setTask} />
      <label
        title={
          "The slices you choose that apply, at the severities you choose: noise; brightness, contrast, blur, " +
          "occlusion and JPEG for images; token replacement for token ids; FGSM and PGD (10 steps) against a " +
          "PyTorch golden model. One more pass of both models per slice and severity, and PGD's gradient steps"
        }
      >
        <input
          type="checkbox"
          checked={robustness}
          onChange={(e) => {
            setRobustness(e.target.checked);
          }}
        />{" "}
        Robustness slices (both models on corrupted copies of the dataset)
      </label>
      {robustness && (
        <RobustnessFields
          offers={offers}
          slices={slices}
          onSlices={setSlices}
          severities={severities}
          onSeverities={setSeverities}
        />
      )}
      {robustness && (
        <div className="launch-grid">
          <DatasetSelect
            label="Out-of-distribution data (optional)"
            optional
            datasets={datasets.filter((d) => d.id !== dataset)}
            value={ood}
            onChange={setOod}
          />
          {goldenIsOnnx &&
            (twins.length > 0 ? (
              <label title="A .pt2 or TorchScript copy of the ONNX golden model: FGSM and PGD take their gradients from it, then both ONNX models run on the crafted inputs (it must reproduce the golden model on 16 samples)">
                PyTorch twin (optional)
                <select
                  value={twin}
                  onChange={(e) => {
                    setTwin(e.target.value);
                  }}
                >
                  <option value="">None (no FGSM / PGD)</option>
                  {twins.map((m) => (
                    <option key={m.id} value={m.id}>
                      {m.name}
                      {m.status === "ready" ? "" : ` (${m.status})`}
                    </option>
                  ))}
                </select>
              </label>
            ) : (
              <p className="muted small-text">
                FGSM and PGD need a PyTorch twin of the ONNX golden model: upload a .pt2 or TorchScript copy to offer
                one.
              </p>
            ))}
        </div>
      )}
      <div className="actions">
        <button type="submit" disabled={create.isPending}>
          Launch
        </button>
        {create.isSuccess && <Queued jobId={create.data.id} kind="fidelity" />}
      </div>
      {problem && <p className="warning">{problem}</p>}
      {create.isError && <ErrorMessage error={create.error} />}
    </form>
  );
}

export function LaunchForm({ projectId }: { projectId: string }) {
  const kinds = useJobKinds();
  const [kind, setKind] = useState<Kind>("fidelity");
  if (kinds.isPending) return <Loading what="job parameters" />;
  if (kinds.isError) return <ErrorMessage error={kinds.error} />;
  const offered = KINDS.filter((k) => k.kind === "recovery" || kinds.data.some((d) => d.kind === k.kind));
  const current = kinds.data.find((k) => k.kind === kind);
  const schema = current?.params_schema;
  const description = kind === "recovery" ? RECOVERY_DESCRIPTION : current?.description;
  return (
    <section className="panel launch" aria-labelledby="launch-heading">
      <div className="launch-head">
        <h2 id="launch-heading">Launch a {kind} job</h2>
        {offered.length > 1 && (
          <div className="segmented" role="radiogroup" aria-label="Job kind">
            {offered.map((k) => (
              <label key={k.kind} className={k.kind === kind ? "checked" : undefined}>
                <input
                  type="radio"
                  name="job-kind"
                  value={k.kind}
                  checked={k.kind === kind}
                  onChange={() => {
                    setKind(k.kind);
                  }}
                />
                {k.label}
              </label>
            ))}
          </div>
        )}
      </div>
      {description && <p className="muted small-text kind-description">{description}</p>}
      {kind === "recovery" ? (
        <RecoveryForm key="recovery" projectId={projectId} />
      ) : !isObject(schema) ? (
        <ErrorMessage error={`The API offers no ${kind} job kind.`} />
      ) : kind === "fidelity" ? (
        <FidelityForm key="fidelity" projectId={projectId} schema={schema} />
      ) : kind === "sensitivity" ? (
        <SensitivityForm key="sensitivity" projectId={projectId} schema={schema} />
      ) : (
        <SweepForm key="sweep" projectId={projectId} schema={schema} />
      )}
    </section>
  );
}
