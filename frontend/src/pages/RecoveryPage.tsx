// A recovery job's page: what it recovered (the golden model, the configuration, point or plan, the methods
// and the dataset), its progress while it runs (the training methods' loss drawn live), then the before/after
// numbers it stored (RecoveryResult: per method step, every metric, per sample and per layer) with links to
// the recovered model's page and its ONNX file. Linked from the jobs table's Results.
import type { Job } from "../api/types";
import { Fact } from "../components/Fact";
import { JobStatusFacts, useJobOfKind } from "../components/JobPage";
import { ResultPageShell } from "../components/ResultPageShell";
import { href } from "../lib/route";
import { useNames } from "../project/names";
import { LiveLossCurve } from "../recovery/LiveLossCurve";
import { recoveryMethods, recoverySource } from "../recovery/recoveryJob";
import { RecoveryResult } from "../recovery/RecoveryResult";
import { isActive } from "../api/polling";

function JobFacts({ job }: { job: Job }) {
  const name = useNames(job.project_id);
  const p = job.params;
  return (
    <dl className="facts">
      <Fact label="Golden model">
        {typeof p.golden_model_id === "string" ? (
          <a href={href({ page: "model", modelId: p.golden_model_id })}>{name(p.golden_model_id)}</a>
        ) : (
          "?"
        )}
      </Fact>
      <Fact label="Recovers">{recoverySource(p)}</Fact>
      <Fact label="Methods">{recoveryMethods(p)}</Fact>
      <Fact label="Dataset">{name(p.dataset_id)}</Fact>
      <JobStatusFacts job={job} />
    </dl>
  );
}

export function RecoveryPage({ jobId }: { jobId: string }) {
  const page = useJobOfKind(jobId, "recovery");
  const name = useNames(page.projectId);
  // a job's name is "" until someone names it
  const title =
    page.job.data?.name || (page.job.data ? `Recovery of ${name(page.job.data.params.golden_model_id)}` : "Recovery");
  return (
    <ResultPageShell
      page={page}
      crumb="Recovery"
      title={title}
      compare={{ label: "Compare runs", href: (projectId) => href({ page: "compare", projectId }) }}
      facts={(job) => <JobFacts job={job} />}
      expected="a recovery job"
      noun="recovery"
      results="its before/after numbers appear when it succeeds"
      downloadable={false}
      after={(job) => (isActive(job) ? <LiveLossCurve message={job.progress_message} /> : null)}
    >
      {(job) => (
        <section className="panel" aria-labelledby="recovery-result-heading">
          <h2 id="recovery-result-heading">Before and after recovery</h2>
          <RecoveryResult jobId={job.id} showModelLink />
        </section>
      )}
    </ResultPageShell>
  );
}
