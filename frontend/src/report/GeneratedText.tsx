// The language-model task's generated text (issue 31): both models continue the prompts; their agreement
// (exact match, BLEU / chrF / ROUGE-L and, with an embedding model, the semantic similarity of the compressed
// text against the golden one, and both against the references), where the two first diverge, repetition, and the first samples side by side with the point
// where the texts part marked.
import type { Layout } from "plotly.js";
import { ChartPanel } from "../components/ChartPanel";
import { Plot } from "../components/Plot";
import { formatNumber, formatPercent } from "../lib/format";
import type { LanguageModelTask } from "./taskBreakdown";
import { repetitionRows, splitAtDivergence } from "./generatedText";
import "./inspector.css";

type Generation = NonNullable<LanguageModelTask["generation"]>;

function Scores({ g }: { g: Generation }) {
  const rows: [string, number | null | undefined, number | null | undefined, number | null | undefined][] = [
    ["BLEU", g.bleu_vs_golden, g.bleu_golden_vs_reference, g.bleu_compressed_vs_reference],
    ["chrF", g.chrf_vs_golden, g.chrf_golden_vs_reference, g.chrf_compressed_vs_reference],
    ["ROUGE-L", g.rouge_l_vs_golden, g.rouge_l_golden_vs_reference, g.rouge_l_compressed_vs_reference],
  ];
  if (g.similarity_model != null) {
    // mean cosine of the mean-pooled embeddings of the project model the launch named (similarity_model_id)
    rows.push([
      `Semantic similarity (cosine, ${g.similarity_model})`,
      g.semantic_similarity,
      g.semantic_golden_vs_reference,
      g.semantic_compressed_vs_reference,
    ]);
  }
  const refs = rows.some(([, , a, b]) => a != null || b != null);
  return (
    <table className="compact" aria-label="Generated text scores">
      <thead>
        <tr>
          <th>Score</th>
          <th>Compressed vs golden</th>
          {refs && <th>Golden vs references</th>}
          {refs && <th>Compressed vs references</th>}
        </tr>
      </thead>
      <tbody>
        {rows.map(([name, vs, gr, cr]) => (
          <tr key={name}>
            <th scope="row">{name}</th>
            <td>{formatNumber(vs ?? null, 4)}</td>
            {refs && <td>{formatNumber(gr ?? null, 4)}</td>}
            {refs && <td>{formatNumber(cr ?? null, 4)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Repetition({ g }: { g: Generation }) {
  return (
    <table className="compact" aria-label="Repetition of the generated text">
      <thead>
        <tr>
          <th>Repetition</th>
          <th>Golden</th>
          <th>Compressed</th>
          <th>Change</th>
        </tr>
      </thead>
      <tbody>
        {repetitionRows(g.repetition).map((r) => (
          <tr key={r.metric}>
            <th scope="row">{r.metric}</th>
            <td>{formatNumber(r.golden, 4)}</td>
            <td>{formatNumber(r.compressed, 4)}</td>
            <td>{formatNumber(r.delta, 3)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Divergence({ g }: { g: Generation }) {
  const h = g.first_divergence.histogram;
  if (h.length === 0 || h.every((v) => v === 0)) return null;
  const layout: Partial<Layout> = {
    bargap: 0.1,
    xaxis: { title: { text: "first generated token where the two differ" } },
    yaxis: { title: { text: "samples" }, rangemode: "tozero", automargin: true },
  };
  return (
    <ChartPanel
      title="Where the generations part"
      caption={`${g.first_divergence.n_identical.toString()} of ${g.n_samples.toString()} prompts were continued identically.`}
      csv={() => ({ header: ["position", "samples"], rows: h.map((v, i) => [i, v]) })}
    >
      <Plot
        filename="first-divergence"
        data={[{ type: "bar", x: h.map((_, i) => i), y: h, marker: { color: "#d62728" }, name: "samples" }]}
        layout={layout}
        height={240}
      />
    </ChartPanel>
  );
}

function Samples({ g }: { g: Generation }) {
  if (g.samples.length === 0) return null;
  return (
    <table className="table compact generations" aria-label="Generated text side by side">
      <caption>
        The first {g.samples.length} prompts; the texts are marked from where they first differ (decoded with{" "}
        {g.decoded_with || "token ids"}).
      </caption>
      <thead>
        <tr>
          <th>#</th>
          <th>Prompt</th>
          <th>Golden</th>
          <th>Compressed</th>
        </tr>
      </thead>
      <tbody>
        {g.samples.map((s) => {
          const parts = splitAtDivergence(s.golden, s.compressed);
          const same = s.first_divergence === null;
          return (
            <tr key={s.index} data-diverged={same ? "no" : "yes"}>
              <td>{s.index}</td>
              <td className="muted">{s.prompt}</td>
              <td>
                {parts.same}
                {parts.golden && <mark className="gen-golden">{parts.golden}</mark>}
              </td>
              <td>
                {parts.same}
                {parts.compressed && <mark className="gen-compressed">{parts.compressed}</mark>}
                {!same && <div className="muted small-text">first differs at token {s.first_divergence}</div>}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

/** The generated-text section of a language-model job that generated (nothing otherwise). */
export function GeneratedText({ task }: { task: LanguageModelTask }) {
  const g = task.generation;
  if (!g) return null;
  return (
    <div className="panel" aria-labelledby="generated-heading">
      <h3 id="generated-heading">Generated text</h3>
      <p>
        {g.n_samples} prompts continued by {g.new_tokens} tokens (
        {g.sampling === "greedy" ? "greedy" : `seeded sampling, seed ${String(g.seed)}`}
        ); identical continuations: {formatPercent(g.exact_match_rate ?? null, 1)}. Time per generated token: golden{" "}
        {formatNumber(g.ms_per_token_golden ?? null, 3)} ms{g.kv_cache_golden ? " (KV cache)" : ""}, compressed{" "}
        {formatNumber(g.ms_per_token_compressed ?? null, 3)} ms{g.kv_cache_compressed ? " (KV cache)" : ""}.
      </p>
      <div className="two-col">
        <Scores g={g} />
        <Repetition g={g} />
      </div>
      <Divergence g={g} />
      <Samples g={g} />
      {g.notes.length > 0 && <p className="muted small-text">{g.notes.join(" ")}</p>}
    </div>
  );
}
