// On a model's page: where a recovered model comes from, with its before/after result.
import type { Model } from "../api/types";
import { RecoveryResult } from "./RecoveryResult";

export function ModelLineage({ model }: { model: Model }) {
  const lineage = model.lineage;
  if (!lineage) return null;
  return (
    <section className="panel" aria-labelledby="lineage-heading">
      <h3 id="lineage-heading">Lineage: recovered by a recovery job</h3>
      <RecoveryResult jobId={lineage.job_id} showModelLink={false} />
    </section>
  );
}
