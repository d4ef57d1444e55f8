// "Recover this" on a sweep point or a sensitivity job's mixed-precision plan: choose the methods (by default equalization → AdaRound → bias correction;
// SmoothQuant with its α, distillation and QAT with their training parameters), launch a recovery job on the
// sweep's model and dataset, watch its progress (a training step's loss and held-out KL, drawn live), then its
// before/after result and loss curve. Shown for torch.export (.pt2) golden models (every method) and ONNX ones
// (the training-free methods), the golden models recovery runs on.
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

type Source = { sweep_point_id: string } | { sensitivity_plan: { job_id: string; average_bits: number } };

/** "Recover this" on a sweep point. */
export function RecoverButton({ sweepJobId, index }: { sweepJobId: string; index: number }) {
  const sweep = useJob(sweepJobId);
  const params = sweep.data?.params as { model_id?: string; dataset_id?: string } | undefined;
  if (index === 0 || !sweep.data || !params?.model_id || !params.dataset_id) return null;
  return (
    <RecoverLauncher
      projectId={sweep.data.project_id}
      modelId={params.model_id}
      datasetId={params.dataset_id}
      source={{ sweep_point_id: `${sweepJobId}:${index.toString()}` }}
    />
  );
}

/** "Recover this plan" on a sensitivity job's mixed-precision plan. */
export function RecoverPlanButton({ scanJobId, averageBits }: { scanJobId: string; averageBits: number }) {
  const scan = useJob(scanJobId);
  const params = scan.data?.params as { model_id?: string; dataset_id?: string } | undefined;
  if (!scan.data || !params?.model_id || !params.dataset_id) return null;
  return (
    <RecoverLauncher
      projectId={scan.data.project_id}
      modelId={params.model_id}
      datasetId={params.dataset_id}
      source={{ sensitivity_plan: { job_id: scanJobId, average_bits: averageBits } }}
      label="Recover this plan"
    />
  );
}

function RecoverLauncher({
  projectId,
  modelId,
  datasetId,
  source,
  label = "Recover this",
}: {
  projectId: string;
  modelId: string;
  datasetId: string;
  source: Source;
  label?: string;
}) {
  const create = useCreateRecovery(projectId);
  const [launched, setLaunched] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  const [choice, setChoice] = useState<MethodChoice>(DEFAULT_CHOICE);
  // recovery runs on torch.export (.pt2) and ONNX golden models: no button that could only be refused
  const golden = useModelWhenKnown(modelId);
  const available = methodsFor(golden.data?.format);
  if (available.length === 0) return null;
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
          {label}
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
                ...source,
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
