"""The generated-text block of the language-model task (`task.generation`, worker/engine/tasks/lm_generation.py
and text_metrics.py): both models continue the dataset's prompts and the continuations are compared."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from backend.api.result_schemas.common import ResultModel


class FirstDivergenceOut(ResultModel):
    histogram: list[int] = Field(
        default_factory=list,
        description="Samples whose two generations first differ at each position 0..new_tokens − 1.",
    )
    n_identical: int = Field(default=0, description="Samples whose two generations are equal.")
    mean: float | None = Field(
        default=None, description="Mean first divergent position of the diverged samples."
    )
    median: float | None = None


class RepetitionOut(ResultModel):
    """Means over the generations (token ids) of one model, or the change compressed − golden."""

    distinct_1: float | None = Field(default=None, description="Distinct tokens / tokens.")
    distinct_2: float | None = Field(default=None, description="Distinct bigrams / bigrams.")
    repeated_3gram_rate: float | None = Field(
        default=None, description="Share of 3-grams already seen earlier in the same generation."
    )
    repeated_4gram_rate: float | None = None
    longest_repeated_span: float | None = Field(
        default=None, description="Tokens of the longest stretch that occurs twice in a generation."
    )


class RepetitionSidesOut(ResultModel):
    golden: RepetitionOut = Field(default_factory=RepetitionOut)
    compressed: RepetitionOut = Field(default_factory=RepetitionOut)
    delta: RepetitionOut = Field(default_factory=RepetitionOut)


class GeneratedSampleOut(ResultModel):
    index: int
    prompt: str = ""
    golden: str = ""
    compressed: str = ""
    first_divergence: int | None = Field(default=None, description="Null when the generations are equal.")


class GenerationOut(ResultModel):
    """Greedy (or seeded-sampling) continuations of both models, compared. BLEU and chrF are sacrebleu's corpus
    scores (0–100), ROUGE-L rouge-score's F measure (0–1), the golden text as the reference."""

    n_samples: int = 0
    new_tokens: int = Field(default=0, description="Tokens generated per prompt (fewer when EOS came first).")
    sampling: Literal["greedy", "seeded"] = "greedy"
    seed: int | None = Field(
        default=None, description="The draws' seed of seeded sampling (the same for both)."
    )
    eos_token_id: int | None = None
    prompt_array: str = ""
    padding: Literal["none", "left", "right"] = Field(
        default="none",
        description="How the prompts were padded in the dataset (read from the attention mask).",
    )
    decoded_with: str = Field(
        default="", description="tokenizer.json (from the golden model's zip), or token ids joined by spaces."
    )
    kv_cache_golden: bool = False
    kv_cache_compressed: bool = False
    tokens_golden: int = 0
    tokens_compressed: int = 0
    ms_per_token_golden: float | None = Field(
        default=None, description="Generation time per generated token."
    )
    ms_per_token_compressed: float | None = None
    stopped_at_eos_golden: int = 0
    stopped_at_eos_compressed: int = 0
    exact_match_rate: float | None = Field(
        default=None, description="Share of prompts with equal generations."
    )
    first_divergence: FirstDivergenceOut = Field(default_factory=FirstDivergenceOut)
    bleu_vs_golden: float | None = None
    chrf_vs_golden: float | None = None
    rouge_l_vs_golden: float | None = None
    bleu_golden_vs_reference: float | None = Field(default=None, description="Null without reference texts.")
    bleu_compressed_vs_reference: float | None = None
    bleu_drop: float | None = Field(
        default=None, description="Golden minus compressed BLEU against the references."
    )
    chrf_golden_vs_reference: float | None = None
    chrf_compressed_vs_reference: float | None = None
    chrf_drop: float | None = None
    rouge_l_golden_vs_reference: float | None = None
    rouge_l_compressed_vs_reference: float | None = None
    rouge_l_drop: float | None = None
    repetition: RepetitionSidesOut = Field(default_factory=RepetitionSidesOut)
    similarity_model: str | None = Field(
        default=None,
        description="The embedding model (task option similarity_model_id) of the semantic numbers; null: none.",
    )
    semantic_similarity: float | None = Field(
        default=None,
        description="Mean cosine of the mean-pooled embeddings of the compressed and golden generations.",
    )
    semantic_similarity_min: float | None = None
    semantic_n_empty: int | None = Field(
        default=None, description="Prompts whose generation had no token to embed (left out of the means)."
    )
    semantic_golden_vs_reference: float | None = Field(
        default=None, description="Mean cosine of the golden generation and its reference; null without."
    )
    semantic_compressed_vs_reference: float | None = None
    semantic_drop: float | None = Field(
        default=None, description="Golden minus compressed cosine against the references."
    )
    samples: list[GeneratedSampleOut] = Field(
        default_factory=list, description="The first samples' prompt and both generated texts."
    )
    notes: list[str] = Field(default_factory=list)
