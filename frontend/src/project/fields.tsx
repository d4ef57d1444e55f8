// Form fields shared by the job launchers.
import type { HTMLAttributes, ReactNode } from "react";
import type { Dataset, Model } from "../api/types";
import { stringAt, type JsonObject } from "../lib/json";
import type { NumericParam } from "../lib/paramSchema";
import { DEFAULT_SENSITIVITY_QUERY, DEFAULT_SWEEP_QUERY, href } from "../lib/route";

export function ModelSelect({
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

export function DatasetSelect({
  datasets,
  value,
  onChange,
  label = "Dataset",
  optional = false,
}: {
  datasets: Dataset[];
  value: string;
  onChange: (id: string) => void;
  label?: string;
  /** Offer "None" instead of requiring a choice. */
  optional?: boolean;
}) {
  return (
    <label>
      {label}
      <select
        value={value}
        onChange={(e) => {
          onChange(e.target.value);
        }}
        required={!optional}
      >
        <option value="">{optional ? "None" : "Choose a dataset…"}</option>
        {datasets.map((d) => (
          <option key={d.id} value={d.id}>
            {d.name} ({d.n_samples.toLocaleString("en-US")} samples)
          </option>
        ))}
      </select>
    </label>
  );
}

export function NumberField({
  param,
  label,
  value,
  onChange,
  required = true,
  disabled = false,
}: {
  param: NumericParam;
  label: string;
  value: string;
  onChange: (v: string) => void;
  required?: boolean;
  disabled?: boolean;
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
        required={required}
        disabled={disabled}
      />
      <span className="muted small-text">{param.description}</span>
    </label>
  );
}

/** A one-line text input (e.g. a comma-separated list) with help under it. */
export function TextField({
  label,
  value,
  onChange,
  inputMode,
  disabled,
  help,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  inputMode: HTMLAttributes<HTMLInputElement>["inputMode"];
  disabled?: boolean;
  help: ReactNode;
}) {
  return (
    <label>
      {label}
      <input
        type="text"
        inputMode={inputMode}
        value={value}
        disabled={disabled}
        onChange={(e) => {
          onChange(e.target.value);
        }}
      />
      <span className="muted small-text">{help}</span>
    </label>
  );
}

/** "Job queued" with a link to the job's page when it has one. */
export function Queued({ jobId, kind }: { jobId: string; kind: string }) {
  const page =
    kind === "sensitivity"
      ? href({ page: "sensitivity", jobId, query: DEFAULT_SENSITIVITY_QUERY })
      : kind === "sweep"
        ? href({ page: "sweep", jobId, query: DEFAULT_SWEEP_QUERY })
        : kind === "recovery"
          ? href({ page: "recovery", jobId })
          : null;
  return (
    <span className="ok" role="status">
      Job queued; follow it in the jobs table
      {page && (
        <>
          {" "}
          or on <a href={page}>its page</a>
        </>
      )}
      .
    </span>
  );
}

/** The schema's own description of a property, for help text. */
export const describeParam = (schema: JsonObject, name: string): string =>
  stringAt(schema, `properties.${name}.description`) ?? "";
