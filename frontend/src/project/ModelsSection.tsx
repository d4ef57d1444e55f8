import { useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { keys } from "../api/keys";
import { useModels } from "../api/models";
import type { Model } from "../api/types";
import { uploadModel } from "../api/upload";
import { QueryView, Empty } from "../components/QueryView";
import { StatusBadge } from "../components/Status";
import { UploadForm } from "../components/UploadForm";
import { formatBytes, formatCount, formatTime } from "../lib/format";
import { numberAt } from "../lib/json";
import { href } from "../lib/route";
import { ManageButtons, NotesText, TagList } from "./ManageActions";

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
      <label>
        <span>
          Name <span className="muted">(optional)</span>
        </span>
        <input
          value={name}
          onChange={(e) => {
            setName(e.target.value);
          }}
          placeholder="default: the file name"
        />
      </label>
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

export function ModelsSection({ projectId, canUpload }: { projectId: string; canUpload: boolean }) {
  const models = useModels(projectId);
  return (
    <section aria-labelledby="models-heading">
      <h2 id="models-heading">Models</h2>
      <div className="split">
        <QueryView query={models} what="models">
          {(items) =>
            items.length === 0 ? (
              <Empty>No models yet: upload a golden model and its compressed versions.</Empty>
            ) : (
              <table className="table" aria-labelledby="models-heading">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Format</th>
                    <th className="num">Size</th>
                    <th>Status</th>
                    <th className="num">Parameters</th>
                    <th className="num">MACs</th>
                    <th>Uploaded</th>
                    {canUpload && (
                      <th>
                        <span className="visually-hidden">Actions</span>
                      </th>
                    )}
                  </tr>
                </thead>
                <tbody>
                  {items.map((m) => (
                    <ModelRow key={m.id} model={m} canManage={canUpload} />
                  ))}
                </tbody>
              </table>
            )
          }
        </QueryView>
        {canUpload && <ModelUpload projectId={projectId} />}
      </div>
    </section>
  );
}
