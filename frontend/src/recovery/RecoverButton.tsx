// "Recover this" on a sweep point: choose the methods (by default equalization → AdaRound → bias correction;
// SmoothQuant with its α, distillation and QAT with their training parameters), launch a recovery job on the
// sweep's model and dataset, watch its progress (a training step's loss and held-out KL, drawn live), then its
// before/after result and loss curve. Shown for sweeps of torch.export (.pt2) models (every method) and ONNX
// models (AdaRound and bias correction), the golden models recovery runs on.
import { useState } from "react";
import { useJob } from "../api/jobs";
import { isActive } from "../api/polling";
import { ErrorMessage } from "../components/QueryView";
import { useCreateRecovery, useModelWhenKnown } from "./queries";
import { LiveLossCurve } from "./LiveLossCurve";
import { MethodChooser } from "./MethodChooser";
import { RecoveryResult } from "./RecoveryResult";
import {
  choiceProblem,
  DEFAULT_CHOICE,
  defaultChoice,
  methodsFor,
  methodsToLaunch,
  type MethodChoice,
} from "./training";

function Launched({ jobId }: { jobId: string }) {
  const job = useJob(jobId);
  if (!job.data) return null;
  if (isActive(job.data))
    return (
      <>
        <p className="muted" role="status">
          Recovering… {job.data.progress_message}
        </p>
        <LiveLossCurve message={job.data.progress_message} />
      </>
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
  const [open, setOpen] = useState(false);
  const [choice, setChoice] = useState<MethodChoice>(DEFAULT_CHOICE);
  const params = sweep.data?.params as { model_id?: string; dataset_id?: string } | undefined;
  // recovery runs on torch.export (.pt2) and ONNX golden models: no button that could only be refused
  const golden = useModelWhenKnown(params?.model_id);
  const available = methodsFor(golden.data?.format);
  if (index === 0 || !params?.model_id || !params.dataset_id || available.length === 0) return null;
  const { model_id: modelId, dataset_id: datasetId } = params;
  const problem = choiceProblem(choice);
  return (
    <div className="recover">
      {launched === null && !open ? (
        <button
          type="button"
          onClick={() => {
            setChoice(defaultChoice(golden.data?.format));
            setOpen(true);
          }}
        >
          Recover this
        </button>
      ) : launched === null ? (
        <form
          className="recover-form"
          onSubmit={(e) => {
            e.preventDefault();
            create.mutate(
              {
                golden_model_id: modelId,
                dataset_id: datasetId,
                sweep_point_id: `${sweepJobId}:${index.toString()}`,
                methods: methodsToLaunch(choice),
              } as Parameters<typeof create.mutate>[0],
              {
                onSuccess: (job) => {
                  setLaunched(job.id);
                },
              },
            );
          }}
        >
          <MethodChooser choice={choice} onChange={setChoice} available={available} />
          {problem && <p className="error">{problem}</p>}
          <button type="submit" disabled={create.isPending || problem !== null}>
            Launch recovery
          </button>{" "}
          <button
            type="button"
            onClick={() => {
              setOpen(false);
            }}
          >
            Cancel
          </button>
        </form>
      ) : (
        <Launched jobId={launched} />
      )}
      {create.isError && <ErrorMessage error={create.error} />}
    </div>
  );
}
