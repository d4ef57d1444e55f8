// One model's inspection: inputs and outputs, totals, and the layer table with parameters and MACs.
import { useModel } from "../api/models";
import { useProject } from "../api/projects";
import type { Model } from "../api/types";
import { Layout } from "../components/Layout";
import { Notes } from "../components/Notes";
import { Empty, QueryView } from "../components/QueryView";
import { GraphSection } from "../graph/GraphView";
import { StatusBadge } from "../components/Status";
import { formatBytes, formatCount, formatPercent, formatShape, formatTime } from "../lib/format";
import { arrayAt, numberAt, stringAt, stringsAt } from "../lib/json";
import { href } from "../lib/route";
import { EditButton } from "../project/ManageActions";
import { ModelFileLink } from "../project/ModelFileLink";
import { Trends } from "../project/Trends";
import { ModelLineage } from "../recovery/ModelLineage";
import { RecoveryForm } from "../recovery/RecoveryForm";
import { methodsFor } from "../recovery/training";
import { useCurrentUser } from "../auth/context";
import { canWrite } from "../auth/roles";

interface Tensor {
  name: string;
  shape: (number | string | null)[];
  dtype: string;
}

function tensors(inspection: unknown, key: "inputs" | "outputs"): Tensor[] {
  return arrayAt(inspection, key).map((t) => ({
    name: stringAt(t, "name") ?? "?",
    shape: arrayAt(t, "shape").map((d) => (typeof d === "number" || typeof d === "string" ? d : null)),
    dtype: stringAt(t, "dtype") ?? "?",
  }));
}

function TensorTable({ title, items }: { title: string; items: Tensor[] }) {
  return (
    <table className="table compact" aria-label={title}>
      <caption>{title}</caption>
      <thead>
        <tr>
          <th>Name</th>
          <th>Shape</th>
          <th>Type</th>
        </tr>
      </thead>
      <tbody>
        {items.map((t) => (
          <tr key={t.name}>
            <td>
              <code>{t.name}</code>
            </td>
            <td>{formatShape(t.shape)}</td>
            <td>{t.dtype}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// A layer is named by its canonical id (the torch module path when the model records it); the ONNX
// node name, output tensors and parameter tensors it also goes by show on hover.
function aliasTitle(aliases: string[]): string | undefined {
  return aliases.length > 0 ? `Also known as: ${aliases.join(", ")}` : undefined;
}

function LayerTable({ inspection }: { inspection: unknown }) {
  const layers = arrayAt(inspection, "layers");
  const totalMacs = numberAt(inspection, "macs");
  if (layers.length === 0) return <Empty>The inspection lists no layers.</Empty>;
  return (
    <table className="table" aria-label="Layers">
      <caption>Layers ({layers.length.toLocaleString("en-US")})</caption>
      <thead>
        <tr>
          <th>#</th>
          <th>Name</th>
          <th>Type</th>
          <th className="num">Parameters</th>
          <th className="num">MACs</th>
          <th className="num">Share of MACs</th>
        </tr>
      </thead>
      <tbody>
        {layers.map((layer, i) => {
          const macs = numberAt(layer, "macs");
          return (
            <tr key={i}>
              <td className="num">{i + 1}</td>
              <td>
                <code title={aliasTitle(stringsAt(layer, "aliases"))}>{stringAt(layer, "name")}</code>
              </td>
              <td>{stringAt(layer, "type")}</td>
              <td className="num">{formatCount(numberAt(layer, "params"))}</td>
              <td className="num">{formatCount(macs)}</td>
              <td className="num">{macs !== null && totalMacs ? formatPercent(macs / totalMacs, 1) : "—"}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** Recover what compressing this model loses: the recovery launcher with this model as the golden one. */
function RecoverModel({ model }: { model: Model }) {
  if (model.status !== "ready" || methodsFor(model.format).length === 0) return null;
  return (
    <details className="panel recover-model">
      <summary>
        <h2 id="recover-model-heading">Recover a compressed version</h2>
      </summary>
      <p className="muted small-text">
        Compress this model by a configuration and recover the fidelity it loses; the recovered model joins the project
        with its before/after report.
      </p>
      <RecoveryForm projectId={model.project_id} modelId={model.id} />
    </details>
  );
}

function ModelDetails({ model, canLaunch }: { model: Model; canLaunch: boolean }) {
  const inspection = model.inspection;
  return (
    <>
      <p className="actions">
        <EditButton what="model" projectId={model.project_id} item={model} label={`model “${model.name}”`} />
        {model.tags.length > 0 && <span className="muted"> Tags: {model.tags.join(", ")}</span>}
      </p>
      {model.notes && <p className="notes">{model.notes}</p>}
      <dl className="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <StatusBadge status={model.status} />
          </dd>
        </div>
        <div>
          <dt>Format</dt>
          <dd>{model.format}</dd>
        </div>
        <div>
          <dt>File</dt>
          <dd>
            {model.filename} ({formatBytes(model.size_bytes)}){" "}
            <ModelFileLink modelId={model.id} filename={model.filename} />
          </dd>
        </div>
        <div>
          <dt>Parameters</dt>
          <dd>{formatCount(numberAt(inspection, "total_params"))}</dd>
        </div>
        <div>
          <dt>MACs</dt>
          <dd>{formatCount(numberAt(inspection, "macs"))}</dd>
        </div>
        <div>
          <dt>FLOPs</dt>
          <dd>{formatCount(numberAt(inspection, "flops"))}</dd>
        </div>
        <div>
          <dt>Uploaded</dt>
          <dd>{formatTime(model.created_at)}</dd>
        </div>
        <div>
          <dt>SHA-256</dt>
          <dd>
            <code className="small-text">{model.artifact_sha256}</code>
          </dd>
        </div>
      </dl>
      {model.error && (
        <p className="error" role="alert">
          {model.error}
        </p>
      )}
      <ModelLineage model={model} />
      {model.status === "inspecting" && (
        <p className="muted" role="status">
          A worker is inspecting this model…
        </p>
      )}
      {inspection && (
        <>
          <Notes notes={stringsAt(inspection, "notes")} />
          <div className="two-col">
            <TensorTable title="Inputs" items={tensors(inspection, "inputs")} />
            <TensorTable title="Outputs" items={tensors(inspection, "outputs")} />
          </div>
          <GraphSection model={model} />
          <LayerTable inspection={inspection} />
        </>
      )}
      {canLaunch && <RecoverModel model={model} />}
      <Trends projectId={model.project_id} goldenModelId={model.id} />
    </>
  );
}

export function ModelPage({ modelId }: { modelId: string }) {
  const me = useCurrentUser();
  const model = useModel(modelId);
  const projectId = model.data?.project_id ?? "";
  const project = useProject(projectId);
  return (
    <Layout
      crumbs={[
        { label: "Projects", href: href({ page: "projects" }) },
        { label: project.data?.name ?? "Project", href: projectId ? href({ page: "project", projectId }) : undefined },
        { label: model.data?.name ?? "Model" },
      ]}
      title={model.data?.name ?? "Model"}
    >
      <QueryView query={model} what="the model">
        {(m) => <ModelDetails model={m} canLaunch={!!project.data && canWrite(me, project.data.team_id)} />}
      </QueryView>
    </Layout>
  );
}
