// "Recover this" on a sweep point or a sensitivity job's mixed-precision plan: choose the methods (by default equalization → AdaRound → bias correction;
// SmoothQuant with its α, AdaRound with its settings, distillation and QAT with their training parameters),
// launch a recovery job on the sweep's model and dataset, watch its progress (a training step's loss and
// held-out KL, drawn live), then its before/after result and loss curve. Shown for torch.export (.pt2) golden
// models (every method) and ONNX ones (the training-free methods), the golden models recovery runs on.
// A sweep point's recoveries come from the server (GET /jobs?sweep_point_id=…): a reload, a permalink or
// another browser shows the point recovered (or recovering) with "Recover again", never "Recover this" anew.
import { useState } from "react";
import { useJob } from "../api/jobs";
import { isActive } from "../api/polling";
import { ErrorMessage, Loading } from "../components/QueryView";
import { ProgressBar } from "../components/Status";
import { href } from "../lib/route";
import { isOffline } from "../offline/mode";
import { useCreateRecovery, useModelWhenKnown, usePlanRecoveries, usePointRecoveries } from "./queries";
import { planJobs, pointRecovery, type PointRecovery } from "./recoveryJob";
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
        <div role="status">
          <ProgressBar value={job.data.progress} label="Recovery progress" etaS={job.data.eta_s} />
          <p className="muted">Recovering… {job.data.progress_message}</p>
        </div>
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

/** "Recover this" on a sweep point, or what the server says of its recoveries. */
export function RecoverButton({ sweepJobId, index }: { sweepJobId: string; index: number }) {
  const sweep = useJob(sweepJobId);
  const params = sweep.data?.params as { model_id?: string; dataset_id?: string } | undefined;
  const pointId = `${sweepJobId}:${index.toString()}`;
  const recoveries = usePointRecoveries(sweep.data?.project_id ?? "", pointId);
  // an exported report has no server to ask, nor one to launch on
  if (isOffline() || index === 0 || !sweep.data || !params?.model_id || !params.dataset_id) return null;
  if (recoveries.isPending) return <Loading what="this point's recoveries" />;
  if (recoveries.isError) return <ErrorMessage error={recoveries.error} />;
  return (
    <RecoverLauncher
      projectId={sweep.data.project_id}
      modelId={params.model_id}
      datasetId={params.dataset_id}
      source={{ sweep_point_id: pointId }}
      recorded={pointRecovery(recoveries.data.items)}
    />
  );
}

/** The server's record of the point in words: its newest recovery (running, succeeded or failed), its page. */
function Recorded({ recorded, what }: { recorded: PointRecovery; what: "point" | "plan" }) {
  if (recorded.state === "none") return null;
  const page = <a href={href({ page: "recovery", jobId: recorded.jobId })}>its page</a>;
  if (recorded.state === "failed")
    return (
      <p className="muted" data-recovery-state="failed">
        The last recovery of this {what} did not succeed{recorded.error ? `: ${recorded.error}` : ""} ({page}).
      </p>
    );
  return (
    <p className="muted" data-recovery-state={recorded.state}>
      {recorded.state === "running" ? `A recovery of this ${what} is running` : `This ${what} was recovered`} ({page}).
    </p>
  );
}

/** "Recover this plan" on a sensitivity job's mixed-precision plan. */
export function RecoverPlanButton({ scanJobId, averageBits }: { scanJobId: string; averageBits: number }) {
  const scan = useJob(scanJobId);
  const params = scan.data?.params as { model_id?: string; dataset_id?: string } | undefined;
  const recoveries = usePlanRecoveries(scan.data?.project_id ?? "", scanJobId);
  if (isOffline() || !scan.data || !params?.model_id || !params.dataset_id) return null;
  if (recoveries.isPending) return <Loading what="this plan's recoveries" />;
  if (recoveries.isError) return <ErrorMessage error={recoveries.error} />;
  return (
    <RecoverLauncher
      projectId={scan.data.project_id}
      modelId={params.model_id}
      datasetId={params.dataset_id}
      source={{ sensitivity_plan: { job_id: scanJobId, average_bits: averageBits } }}
      label="Recover this plan"
      what="plan"
      recorded={pointRecovery(planJobs(recoveries.data.items, averageBits))}
    />
  );
}

function RecoverLauncher({
  projectId,
  modelId,
  datasetId,
  source,
  label = "Recover this",
  what = "point",
  recorded,
}: {
  projectId: string;
  modelId: string;
  datasetId: string;
  source: Source;
  label?: string;
  what?: "point" | "plan";
  /** What the server records of this source's recoveries (sweep points); a launch then shows through it. */
  recorded?: PointRecovery;
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
  // A launch shows at once; the server's newest recovery of the point otherwise (a reload sees it too). One
  // <Launched> at one place in the tree, so its live loss curve keeps its samples when the record catches up.
  const recordedJob = recorded && recorded.state !== "none" ? recorded : null;
  const current = launched ?? (recordedJob && recordedJob.state !== "failed" ? recordedJob.jobId : null);
  const busy = current !== null && (current !== recordedJob?.jobId || recordedJob.state === "running");
  return (
    <div className="recover">
      {recordedJob && (launched === null || launched === recordedJob.jobId) && (
        <Recorded recorded={recordedJob} what={what} />
      )}
      {current !== null && <Launched key={current} jobId={current} />}
      {busy ? null : !open ? (
        <button
          type="button"
          onClick={() => {
            setChoice(defaultChoice(golden.data?.format));
            setOpen(true);
          }}
        >
          {recordedJob || launched ? "Recover again" : label}
        </button>
      ) : (
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
                  setOpen(false);
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
      )}
      {create.isError && <ErrorMessage error={create.error} />}
    </div>
  );
}
