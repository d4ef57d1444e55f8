// "Recover this" on a sweep point: launches a recovery job with the default methods (equalization →
// AdaRound → bias correction) on the sweep's model and dataset, then follows it to its before/after result.
// Shown for sweeps of torch.export (.pt2) models, the golden models recovery runs on.
import { useState } from "react";
import { isActive, useJob } from "../api/queries";
import { ErrorMessage } from "../components/QueryView";
import { useCreateRecovery, useModelWhenKnown } from "./queries";
import { DEFAULT_METHODS } from "./recovery";
import { RecoveryResult } from "./RecoveryResult";

function Launched({ jobId }: { jobId: string }) {
  const job = useJob(jobId);
  if (!job.data) return null;
  if (isActive(job.data))
    return (
      <p className="muted" role="status">
        Recovering… {job.data.progress_message}
      </p>
    );
  if (job.data.status !== "succeeded")
    return (
      <p className="error">
        Recovery {job.data.status}: {job.data.error ?? ""}
      </p>
    );
  return <RecoveryResult jobId={jobId} showModelLink />;
}

export function RecoverButton({ sweepJobId, index }: { sweepJobId: string; index: number }) {
  const sweep = useJob(sweepJobId);
  const projectId = sweep.data?.project_id ?? "";
  const create = useCreateRecovery(projectId);
  const [launched, setLaunched] = useState<string | null>(null);
  const params = sweep.data?.params as { model_id?: string; dataset_id?: string } | undefined;
  // recovery runs on torch.export (.pt2) golden models only: no button that could only be refused
  const golden = useModelWhenKnown(params?.model_id);
  if (index === 0 || !params?.model_id || !params.dataset_id || golden.data?.format !== "torch_export") return null;
  const { model_id: modelId, dataset_id: datasetId } = params;
  return (
    <div className="recover">
      {launched === null ? (
        <button
          type="button"
          disabled={create.isPending}
          onClick={() => {
            create.mutate(
              {
                golden_model_id: modelId,
                dataset_id: datasetId,
                sweep_point_id: `${sweepJobId}:${index.toString()}`,
                methods: DEFAULT_METHODS,
              } as Parameters<typeof create.mutate>[0],
              {
                onSuccess: (job) => {
                  setLaunched(job.id);
                },
              },
            );
          }}
        >
          Recover this
        </button>
      ) : (
        <Launched jobId={launched} />
      )}
      {create.isError && <ErrorMessage error={create.error} />}
    </div>
  );
}
