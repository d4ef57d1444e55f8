// Sequence outputs (N, T, D), e.g. a MiniLM encoder's token embeddings: per-token cosine and SQNR over the
// attention mask's tokens, and the pooled sentence embeddings' cosine and nearest-neighbour agreement.
import { ApiError } from "../api/http";
import { ErrorMessage, Loading } from "../components/QueryView";
import { formatNumber, formatPercent } from "../lib/format";
import { sequenceRows, type OutputSequence } from "./diagnostics";
import { useFidelitySequence } from "./diagnosticsQueries";

function OutputTable({ name, out }: { name: string; out: OutputSequence }) {
  const pooled = out.pooled;
  return (
    <div className="panel">
      <h3>
        Output <code>{name}</code>
      </h3>
      <p className="muted">
        {out.n_tokens} tokens of {out.n_samples} samples
        {out.masked ? " (those the attention mask keeps)" : " (no attention mask: every position)"}
        {out.token_sqnr_db.n_exact > 0
          ? `; ${out.token_sqnr_db.n_exact.toString()} tokens exact (SQNR +∞) left out of SQNR`
          : ""}
        .
      </p>
      <table className="compact" aria-label={`Token fidelity of ${name}`}>
        <thead>
          <tr>
            <th>Per token</th>
            <th>mean</th>
            <th>min</th>
            <th>p5</th>
            <th>median</th>
            <th>p95</th>
          </tr>
        </thead>
        <tbody>
          {sequenceRows(out).map((row) => (
            <tr key={row.metric}>
              <th scope="row">{row.metric}</th>
              {row.values.map((v, i) => (
                <td key={i}>{formatNumber(v)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <dl className="facts">
        <div>
          <dt>Pooling</dt>
          <dd>{pooled.pooling === "mean" ? "mean over the mask" : "first token"}</dd>
        </div>
        <div>
          <dt>Sentence cosine mean / min</dt>
          <dd>
            {formatNumber(pooled.cosine_mean)} / {formatNumber(pooled.cosine_min)}
          </dd>
        </div>
        <div>
          <dt>Nearest neighbour kept</dt>
          <dd>{formatPercent(pooled.neighbour_top1_agreement, 1)}</dd>
        </div>
        <div>
          <dt>Top-{pooled.neighbour_k} neighbour overlap</dt>
          <dd>{formatPercent(pooled.neighbour_topk_overlap, 1)}</dd>
        </div>
      </dl>
    </div>
  );
}

/** The sequence-fidelity section of the report; nothing when no output is shaped (N, T, D). */
export function SequenceFidelity({ jobId }: { jobId: string }) {
  const sequence = useFidelitySequence(jobId);
  if (sequence.isError && sequence.error instanceof ApiError && sequence.error.status === 404) return null;
  return (
    <section aria-labelledby="sequence-heading">
      <h2 id="sequence-heading">Sequence and embedding fidelity</h2>
      {sequence.isPending ? (
        <Loading what="the sequence fidelity" />
      ) : sequence.isError ? (
        <ErrorMessage error={sequence.error} />
      ) : (
        Object.entries(sequence.data.outputs).map(([name, out]) => <OutputTable key={name} name={name} out={out} />)
      )}
    </section>
  );
}
