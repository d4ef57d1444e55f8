// The fidelity job launcher: models and dataset from the project, numeric parameters (defaults, bounds,
// help) from the kind's schema in GET /job-kinds.
import { useState, type SubmitEvent } from "react";
import { useCreateFidelityJob, useDatasets, useJobKinds, useModels } from "../api/queries";
import type { Model } from "../api/types";
import { ErrorMessage, Loading } from "../components/QueryView";
import { isObject } from "../lib/json";
import { numericParam, parseParam, type NumericParam } from "../lib/paramSchema";

/** The numeric parameters the form offers, with their labels; the rest keep the API's defaults. */
const NUMERIC = { top_k: "Top-k", threshold_kl: "KL threshold (nats)", batch_size: "Batch size" } as const;

function ModelSelect({
  label,
  models,
  value,
  onChange,
}: {
  label: string;
  models: Model[];
  value: string;
  onChange: (id: string) => void;
}) {
  return (
    <label>
      {label}
      <select
        value={value}
        onChange={(e) => {
          onChange(e.target.value);
        }}
        required
      >
        <option value="">Choose a model…</option>
        {models.map((m) => (
          <option key={m.id} value={m.id} disabled={m.status === "invalid"}>
            {m.name}
            {m.status === "ready" ? "" : ` (${m.status})`}
          </option>
        ))}
      </select>
    </label>
  );
}

function NumberField({
  param,
  label,
  value,
  onChange,
}: {
  param: NumericParam;
  label: string;
  value: string;
  onChange: (v: string) => void;
}) {
  return (
    <label>
      {label}
      <input
        type="number"
        inputMode="decimal"
        step={param.integer ? 1 : "any"}
        min={param.minimum ?? undefined}
        max={param.maximum ?? undefined}
        value={value}
        onChange={(e) => {
          onChange(e.target.value);
        }}
        required
      />
      <span className="muted small-text">{param.description}</span>
    </label>
  );
}

function Form({ projectId, params }: { projectId: string; params: NumericParam[] }) {
  const labelOf = (name: string) => Object.entries(NUMERIC).find(([key]) => key === name)?.[1] ?? name;
  const models = useModels(projectId).data ?? [];
  const datasets = useDatasets(projectId).data ?? [];
  const create = useCreateFidelityJob(projectId);
  const [golden, setGolden] = useState("");
  const [compressed, setCompressed] = useState("");
  const [dataset, setDataset] = useState("");
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(params.map((p) => [p.name, p.default === null ? "" : String(p.default)])),
  );
  const [problem, setProblem] = useState<string | null>(null);

  const submit = (event: SubmitEvent<HTMLFormElement>) => {
    event.preventDefault();
    const body: Record<string, string | number> = {
      golden_model_id: golden,
      compressed_model_id: compressed,
      dataset_id: dataset,
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
    create.mutate(body);
  };

  return (
    <form className="panel launch" onSubmit={submit} aria-labelledby="launch-heading">
      <h2 id="launch-heading">Launch a fidelity job</h2>
      <div className="launch-grid">
        <ModelSelect label="Golden model" models={models} value={golden} onChange={setGolden} />
        <ModelSelect label="Compressed model" models={models} value={compressed} onChange={setCompressed} />
        <label>
          Dataset
          <select
            value={dataset}
            onChange={(e) => {
              setDataset(e.target.value);
            }}
            required
          >
            <option value="">Choose a dataset…</option>
            {datasets.map((d) => (
              <option key={d.id} value={d.id}>
                {d.name} ({d.n_samples.toLocaleString("en-US")} samples)
              </option>
            ))}
          </select>
        </label>
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
      <div className="actions">
        <button type="submit" disabled={create.isPending}>
          Launch
        </button>
        {create.isSuccess && (
          <span className="ok" role="status">
            Job queued; follow it in the jobs table.
          </span>
        )}
      </div>
      {problem && <p className="warning">{problem}</p>}
      {create.isError && <ErrorMessage error={create.error} />}
    </form>
  );
}

export function LaunchForm({ projectId }: { projectId: string }) {
  const kinds = useJobKinds();
  if (kinds.isPending) return <Loading what="job parameters" />;
  if (kinds.isError) return <ErrorMessage error={kinds.error} />;
  const schema = kinds.data.find((k) => k.kind === "fidelity")?.params_schema;
  if (!isObject(schema)) return <ErrorMessage error="The API offers no fidelity job kind." />;
  const params = Object.keys(NUMERIC)
    .map((name) => numericParam(schema, name))
    .filter((p): p is NumericParam => p !== null);
  return <Form projectId={projectId} params={params} />;
}
