import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useDatasets } from "../api/datasets";
import { keys } from "../api/keys";
import type { Dataset } from "../api/types";
import { uploadDataset } from "../api/upload";
import { UploadForm, UploadNameField } from "../components/UploadForm";
import { formatBytes, formatShape, formatTime } from "../lib/format";
import { DatasetPreview } from "./DatasetPreview";
import { ManageButtons, NotesText, TagList } from "./ManageActions";
import { UploadSection } from "./UploadSection";

const RECIPE_EXAMPLE =
  '{"size": [224, 224], "mode": "RGB", "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "input_name": "input"}';

const COLUMNS = [
  "Name",
  "Kind",
  { label: "Samples", numeric: true },
  "Arrays",
  "Labels",
  { label: "Size", numeric: true },
  "Uploaded",
];

function DatasetRow({ dataset, canManage }: { dataset: Dataset; canManage: boolean }) {
  const [open, setOpen] = useState(false);
  const previewId = `dataset-preview-${dataset.id}`;
  return (
    <>
      <tr data-dataset-id={dataset.id}>
        <td>
          {dataset.name}
          <TagList tags={dataset.tags} />
          <NotesText notes={dataset.notes} />
        </td>
        <td>{dataset.kind === "image_zip" ? "images (.zip)" : dataset.kind}</td>
        <td className="num">{dataset.n_samples.toLocaleString("en-US")}</td>
        <td>
          <ul className="plain">
            {Object.entries(dataset.arrays).map(([name, array]) => (
              <li key={name}>
                <code>{name}</code> {formatShape(array.shape)} <span className="muted">{array.dtype}</span>
              </li>
            ))}
          </ul>
        </td>
        <td>{dataset.has_labels ? "yes" : "no"}</td>
        <td className="num">{formatBytes(dataset.size_bytes)}</td>
        <td>{formatTime(dataset.created_at)}</td>
        <td>
          <div className="row-actions">
            <button
              type="button"
              className="small"
              aria-expanded={open}
              aria-controls={open ? previewId : undefined}
              aria-label={`Preview ${dataset.name}`}
              onClick={() => {
                setOpen(!open);
              }}
            >
              {open ? "Hide preview" : "Preview"}
            </button>
            {canManage && (
              <ManageButtons
                what="dataset"
                projectId={dataset.project_id}
                item={dataset}
                label={`dataset “${dataset.name}”`}
              />
            )}
          </div>
        </td>
      </tr>
      {open && (
        <tr className="preview-row">
          <td colSpan={COLUMNS.length + 1 /* and the actions */}>
            <DatasetPreview datasetId={dataset.id} id={previewId} />
          </td>
        </tr>
      )}
    </>
  );
}

function DatasetUpload({ projectId }: { projectId: string }) {
  const client = useQueryClient();
  const [name, setName] = useState("");
  const [recipe, setRecipe] = useState("");
  const upload = async (file: File, onProgress: (f: number) => void) => {
    if (recipe.trim()) {
      try {
        JSON.parse(recipe);
      } catch {
        throw new Error("The preprocessing recipe is not valid JSON.");
      }
    }
    const dataset = await uploadDataset(projectId, file, { name, preprocessing: recipe }, onProgress);
    setName("");
    setRecipe("");
    await client.invalidateQueries({ queryKey: keys.datasets(projectId) });
    if (dataset.duplicate_of)
      return `This file is already in the project as “${dataset.name}” (same sha256 and preprocessing): nothing new was stored.`;
    return `Uploaded ${dataset.name}: ${dataset.n_samples.toLocaleString("en-US")} samples.`;
  };
  return (
    <UploadForm
      title="Upload a dataset"
      accept=".npz,.zip,.jsonl,.txt"
      hint={
        ".npz with arrays named after the model inputs (and optional int 'labels'), a .zip of images, or text for a " +
        'language model: a .jsonl of {"prompt": …, "reference": …} lines or a .txt corpus, tokenized at job time ' +
        "with the golden model's tokenizer.json."
      }
      upload={upload}
    >
      <UploadNameField value={name} onChange={setName} />
      <label>
        <span>
          Preprocessing <span className="muted">(JSON, image .zip only; default: 224×224 RGB scaled to 0–1)</span>
        </span>
        <textarea
          rows={2}
          value={recipe}
          onChange={(e) => {
            setRecipe(e.target.value);
          }}
          placeholder={RECIPE_EXAMPLE}
          spellCheck={false}
        />
      </label>
    </UploadForm>
  );
}

export function DatasetsSection({ projectId, canUpload }: { projectId: string; canUpload: boolean }) {
  return (
    <UploadSection
      name="datasets"
      title="Datasets"
      query={useDatasets(projectId)}
      empty="No datasets yet: upload the inputs to compare the models on."
      columns={COLUMNS}
      actions
      row={(d) => <DatasetRow dataset={d} canManage={canUpload} />}
      upload={canUpload && <DatasetUpload projectId={projectId} />}
    />
  );
}
