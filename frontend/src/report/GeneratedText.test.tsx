import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { GeneratedText } from "./GeneratedText";
import { repetitionRows, splitAtDivergence } from "./generatedText";
import type { LanguageModelTask } from "./taskBreakdown";

describe("splitAtDivergence", () => {
  it("keeps the shared start and each text's rest", () => {
    expect(splitAtDivergence("the cat sat", "the cow sat")).toEqual({
      same: "the c",
      golden: "at sat",
      compressed: "ow sat",
    });
    expect(splitAtDivergence("same", "same")).toEqual({ same: "same", golden: "", compressed: "" });
    expect(splitAtDivergence("ab", "abc")).toEqual({ same: "ab", golden: "", compressed: "c" });
  });
});

describe("repetitionRows", () => {
  it("lists each measure for both models and the change", () => {
    const rows = repetitionRows({
      golden: { distinct_1: 0.9 },
      compressed: { distinct_1: 0.7 },
      delta: { distinct_1: -0.2 },
    });
    expect(rows[0]).toEqual({ metric: "Distinct tokens (distinct-1)", golden: 0.9, compressed: 0.7, delta: -0.2 });
    expect(rows).toHaveLength(5);
    expect(rows[4]?.golden).toBeNull();
  });
});

describe("GeneratedText", () => {
  const generation = {
    n_samples: 2,
    new_tokens: 4,
    sampling: "greedy",
    decoded_with: "tokenizer.json",
    exact_match_rate: 0.5,
    kv_cache_golden: true,
    kv_cache_compressed: true,
    first_divergence: { histogram: [0, 1, 0, 0], n_identical: 1 },
    bleu_vs_golden: 42.5,
    repetition: { golden: {}, compressed: {}, delta: {} },
    samples: [
      { index: 0, prompt: "a b", golden: "c d e f", compressed: "c d e f", first_divergence: null },
      { index: 1, prompt: "x", golden: "y z y z", compressed: "y q q q", first_divergence: 1 },
    ],
    notes: [],
  };

  it("shows both generations side by side, marked from where they part, and says nothing without generation", () => {
    const task = { name: "language_model", kl_by_position: [], generation } as unknown as LanguageModelTask;
    const html = renderToStaticMarkup(<GeneratedText task={task} />);
    expect(html).toContain("Generated text");
    expect(html).toContain('<mark class="gen-golden">z y z</mark>');
    expect(html).toContain('<mark class="gen-compressed">q q q</mark>');
    expect(html).toContain("first differs at token 1");
    expect(html).toContain("(KV cache)");
    expect(html).not.toContain("Golden vs references"); // no reference texts
    expect(html).not.toContain("Semantic similarity"); // no embedding model named
    const semantic = { ...generation, similarity_model: "minilm.zip", semantic_similarity: 0.91234 };
    const withModel = {
      name: "language_model",
      kl_by_position: [],
      generation: semantic,
    } as unknown as LanguageModelTask;
    const scored = renderToStaticMarkup(<GeneratedText task={withModel} />);
    expect(scored).toContain("Semantic similarity (cosine, minilm.zip)</th><td>0.9123</td>");
    const none = { name: "language_model", kl_by_position: [], generation: null } as unknown as LanguageModelTask;
    expect(renderToStaticMarkup(<GeneratedText task={none} />)).toBe("");
  });
});
