// What the sensitivity and sweep launch forms share: the model and dataset row, their numeric fields read from
// the kind's schema, the configurations ticked as presets or edited as JSON (kept in step, in one fieldset),
// "More settings" and the Launch row.
import { useId, useMemo, useState, type ReactNode } from "react";
import { useDatasets } from "../api/datasets";
import { useModels } from "../api/models";
import { ErrorMessage } from "../components/QueryView";
import type { JsonObject } from "../lib/json";
import { numericParam, parseParam, type NumericParam } from "../lib/paramSchema";
import { describeConfig } from "../lib/sensitivity";
import { formatConfigs, type Config } from "../lib/sensitivityParams";
import { DatasetSelect, ModelSelect, NumberField, Queued } from "./fields";

/**
 * The numeric parameters named in `labels` (those the schema has), their texts, a field for each and
 * `collect`, which puts the parsed values into a request body (blank nullable ones left out: the API decides)
 * or says what is wrong.
 */
export function useNumericFields<N extends string>(schema: JsonObject, labels: Record<N, string>) {
  const params = useMemo(
    () =>
      (Object.keys(labels) as N[])
        .map((name) => numericParam(schema, name))
        .filter((p): p is NumericParam => p !== null),
    [schema, labels],
  );
  const [values, setValues] = useState<Record<string, string>>(() =>
    Object.fromEntries(params.map((p) => [p.name, p.default === null ? "" : String(p.default)])),
  );
  const field = (name: N, disabled = false): ReactNode => {
    const param = params.find((p) => p.name === name);
    return (
      param && (
        <NumberField
          param={param}
          label={labels[name] + (param.nullable ? " (blank: automatic)" : "")}
          value={values[name] ?? ""}
          required={!param.nullable && !disabled}
          disabled={disabled}
          onChange={(v) => {
            setValues((old) => ({ ...old, [name]: v }));
          }}
        />
      )
    );
  };
  const collect = (body: Record<string, unknown>): string | null => {
    for (const param of params) {
      const parsed = parseParam(param, values[param.name] ?? "");
      if (typeof parsed === "string") return parsed;
      if (parsed !== null) body[param.name] = parsed;
    }
    return null;
  };
  /** The text typed in a field ("" when it is blank). */
  const value = (name: N): string => values[name] ?? "";
  return { field, collect, value };
}

interface JsonText {
  open: boolean;
  text: string;
  error: string | null;
}

/** The chosen configurations and their JSON text: ticking presets rewrites the text, valid text the list. */
export function useConfigs(initial: () => Config[], parse: (text: string) => Config[] | string) {
  const [configs, setConfigs] = useState<Config[]>(initial);
  const [json, setJson] = useState<JsonText>(() => ({ open: false, text: formatConfigs(initial()), error: null }));
  const setFromPresets = (next: Config[]) => {
    setConfigs(next);
    setJson((old) => ({ ...old, text: formatConfigs(next), error: null }));
  };
  const editJson = (text: string) => {
    const parsed = parse(text);
    if (typeof parsed === "string") setJson((old) => ({ ...old, text, error: parsed }));
    else {
      setJson((old) => ({ ...old, text, error: null }));
      setConfigs(parsed);
    }
  };
  const toggleJson = () => {
    setJson((old) => ({ ...old, open: !old.open }));
  };
  /** What stops a launch while the JSON does not parse. */
  const jsonProblem = json.error === null ? null : `The configurations' JSON: ${json.error}`;
  return { configs, json, setFromPresets, editJson, toggleJson, jsonProblem };
}

export type ConfigsEditor = ReturnType<typeof useConfigs>;

/** The button that shows or hides the JSON editor (`${id}-json`). */
function JsonToggle({ id, open, onToggle }: { id: string; open: boolean; onToggle: () => void }) {
  return (
    <button type="button" className="small" aria-expanded={open} aria-controls={`${id}-json`} onClick={onToggle}>
      {open ? "Hide JSON" : "Edit as JSON"}
    </button>
  );
}

/** The configurations as JSON, with the parse error or `help` under it. */
function ConfigsJson({
  id,
  json,
  maxRows,
  help,
  onEdit,
}: {
  id: string;
  json: JsonText;
  maxRows: number;
  help: string;
  onEdit: (text: string) => void;
}) {
  return (
    <label id={`${id}-json`} className="json-editor">
      Configurations (JSON)
      <textarea
        rows={Math.min(maxRows, Math.max(4, json.text.split("\n").length + 1))}
        value={json.text}
        spellCheck={false}
        aria-invalid={json.error !== null}
        aria-describedby={`${id}-json-help`}
        onChange={(e) => {
          onEdit(e.target.value);
        }}
      />
      <span id={`${id}-json-help`} className={json.error ? "error small-text" : "muted small-text"}>
        {json.error ?? help}
      </span>
    </label>
  );
}

/** Launch, then "queued" with a link to the job's page; what is wrong with the form or the request. */
export function LaunchRow({
  kind,
  create,
  problem,
}: {
  kind: string;
  create: { isPending: boolean; isSuccess: boolean; data?: { id: string }; isError: boolean; error: Error | null };
  problem: string | null;
}) {
  return (
    <>
      <div className="actions">
        <button type="submit" disabled={create.isPending}>
          Launch
        </button>
        {create.isSuccess && create.data && <Queued jobId={create.data.id} kind={kind} />}
      </div>
      {problem && <p className="warning">{problem}</p>}
      {create.isError && create.error && <ErrorMessage error={create.error} />}
    </>
  );
}

/** The first row: the model, the dataset and (`samples`) how many of its samples are used. */
export function ModelAndDataset({
  projectId,
  model,
  dataset,
  onModel,
  onDataset,
  samples,
}: {
  projectId: string;
  model: string;
  dataset: string;
  onModel: (id: string) => void;
  onDataset: (id: string) => void;
  samples: ReactNode;
}) {
  const models = useModels(projectId).data ?? [];
  const datasets = useDatasets(projectId).data ?? [];
  return (
    <div className="launch-grid">
      <ModelSelect label="Model" models={models} value={model} onChange={onModel} />
      <DatasetSelect datasets={datasets} value={dataset} onChange={onDataset} />
      {samples}
    </div>
  );
}

interface PresetChip {
  id: string;
  label: string;
  title: string;
}

/** The presets as ticks (disabled while the JSON does not parse), then the JSON editor's toggle. */
function PresetChips<P extends PresetChip>({
  presets,
  ticked,
  onToggle,
  disabled,
  toggle,
}: {
  presets: readonly P[];
  ticked: (preset: P) => boolean;
  onToggle: (preset: P) => void;
  disabled: boolean;
  toggle: ReactNode;
}) {
  return (
    <div className="chips">
      {presets.map((preset) => (
        <label key={preset.id} className="chip" title={preset.title}>
          <input
            type="checkbox"
            checked={ticked(preset)}
            disabled={disabled}
            onChange={() => {
              onToggle(preset);
            }}
          />
          {preset.label}
        </label>
      ))}
      {toggle}
    </div>
  );
}

/** The chosen configurations that no preset stands for, described. */
function NotAmongPresets({ custom }: { custom: readonly Config[] }) {
  return custom.length > 0 ? (
    <p className="muted small-text">Not among the presets: {custom.map((c) => describeConfig(c)).join("; ")}.</p>
  ) : null;
}

/**
 * "Configurations" with `summary` beside it: the presets to tick, then `children` (a note), the chosen
 * configurations no preset stands for, and the JSON editor when it is open.
 */
export function ConfigsFieldset<P extends PresetChip>({
  summary,
  presets,
  ticked,
  onToggle,
  editor,
  custom,
  maxRows,
  help,
  children,
}: {
  summary: ReactNode;
  presets: readonly P[];
  ticked: (preset: P) => boolean;
  onToggle: (preset: P) => void;
  editor: ConfigsEditor;
  custom: readonly Config[];
  /** The JSON editor's height at most, in rows. */
  maxRows: number;
  /** Under the JSON editor while it parses. */
  help: string;
  children?: ReactNode;
}) {
  const id = useId();
  return (
    <fieldset className="fields presets">
      <legend>
        Configurations <span className="muted small-text">{summary}</span>
      </legend>
      <PresetChips
        presets={presets}
        ticked={ticked}
        onToggle={onToggle}
        disabled={editor.json.error !== null}
        toggle={<JsonToggle id={id} open={editor.json.open} onToggle={editor.toggleJson} />}
      />
      {children}
      <NotAmongPresets custom={custom} />
      {editor.json.open && (
        <ConfigsJson id={id} json={editor.json} maxRows={maxRows} help={help} onEdit={editor.editJson} />
      )}
    </fieldset>
  );
}

/** Settings most people leave alone, folded. */
export function MoreSettings({ children }: { children: ReactNode }) {
  return (
    <details className="more-settings">
      <summary>More settings</summary>
      <div className="launch-grid">{children}</div>
    </details>
  );
}
