import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { keys } from "../api/keys";
import { useModels } from "../api/models";
import type { Model } from "../api/types";
import { uploadModel } from "../api/upload";
import { StatusBadge } from "../components/Status";
import { UploadForm, UploadNameField } from "../components/UploadForm";
import { formatBytes, formatCount, formatTime } from "../lib/format";
import { numberAt } from "../lib/json";
import { href } from "../lib/route";
import { ManageButtons, NotesText, TagList } from "./ManageActions";
import { UploadSection } from "./UploadSection";

function ModelRow({ model, canManage }: { model: Model; canManage: boolean }) {
  return (
    <tr data-model-id={model.id}>
      <td>
        <a href={href({ page: "model", modelId: model.id })}>{model.name}</a>
        <TagList tags={model.tags} />
        <NotesText notes={model.notes} />
        {model.error && <div className="error small-text">{model.error}</div>}
      </td>
      <td>{model.format}</td>
      <td className="num">{formatBytes(model.size_bytes)}</td>
      <td>
        <StatusBadge status={model.status} />
      </td>
      <td className="num">{formatCount(numberAt(model.inspection, "total_params"))}</td>
      <td className="num">{formatCount(numberAt(model.inspection, "macs"))}</td>
      <td>{formatTime(model.created_at)}</td>
      {canManage && (
        <td>
          <div className="row-actions">
            <ManageButtons what="model" projectId={model.project_id} item={model} label={`model “${model.name}”`} />
          </div>
        </td>
      )}
    </tr>
  );
}

function ModelUpload({ projectId }: { projectId: string }) {
  const client = useQueryClient();
  const [name, setName] = useState("");
  const [shapes, setShapes] = useState("");
  const upload = async (file: File, onProgress: (f: number) => void) => {
    const model = await uploadModel(projectId, file, { name, input_shapes: shapes }, onProgress);
    const typedShapes = shapes;
    setName("");
    setShapes("");
    await client.invalidateQueries({ queryKey: keys.models(projectId) });
    void client.invalidateQueries({ queryKey: keys.jobs(projectId) });
    if (model.duplicate_of)
      return `This file is already in the project as “${model.name}” (same sha256${typedShapes.trim() ? " and input shapes" : ""}): nothing new was stored.`;
    return `Uploaded ${model.name}; a worker is inspecting it.`;
  };
  return (
    <UploadForm
      title="Upload a model"
      accept=".onnx,.zip,.pt2,.pt"
      hint="ONNX (.onnx, or .zip with external data), .pt2 or TorchScript .pt."
      upload={upload}
    >
      <UploadNameField value={name} onChange={setName} />
      <label>
        <span>
          Input shapes <span className="muted">(optional JSON, for MACs)</span>
        </span>
        <input
          value={shapes}
          onChange={(e) => {
            setShapes(e.target.value);
          }}
          placeholder='{"input": [1, 3, 224, 224]}'
          spellCheck={false}
        />
      </label>
    </UploadForm>
  );
}

const COLUMNS = [
  "Name",
  "Format",
  { label: "Size", numeric: true },
  "Status",
  { label: "Parameters", numeric: true },
  { label: "MACs", numeric: true },
  "Uploaded",
];

export function ModelsSection({ projectId, canUpload }: { projectId: string; canUpload: boolean }) {
  return (
    <UploadSection
      name="models"
      title="Models"
      query={useModels(projectId)}
      empty="No models yet: upload a golden model and its compressed versions."
      columns={COLUMNS}
      actions={canUpload}
      row={(m) => <ModelRow model={m} canManage={canUpload} />}
      upload={canUpload && <ModelUpload projectId={projectId} />}
    />
  );
}
