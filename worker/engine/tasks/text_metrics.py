"""Scores of generated text (issue 31, "Generated text"): the compressed model's generations against the golden
model's, each model's against reference continuations when the dataset has them, and the repetition of each.

Definitions (token level = on the generated token ids, cut before EOS; text level = on the decoded strings):
- exact match: the two token sequences are equal; first divergence: the first position where they differ
  (the shorter one's length when one is a prefix of the other; None when equal).
- BLEU and chrF as sacrebleu computes them (corpus level, its default 13a tokenizer and chrF's default
  character 6-grams, β = 2), the golden text as the one reference; per sample, sacrebleu's sentence BLEU.
- ROUGE-L F as rouge-score computes it (`RougeScorer(["rougeL"])`, its default tokenizer: lower case,
  non-alphanumerics dropped), target = golden (or the reference), prediction = compressed; per sample, and
  their mean. rouge-score scores two empty texts 0.
- repetition of one generation: distinct-n = distinct n-grams / n-grams (n = 1, 2); repeated n-gram rate =
  share of its n-grams already seen earlier in it (n = 3, 4); longest repeated span = the most tokens a
  stretch has that occurs at least twice (overlaps allowed). Each is per generation and averaged over the
  generations long enough to have one n-gram (the span: over all), for each model, with the change
  compressed − golden.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

BLEU_TOKENIZER = "13a"


def first_divergence(golden: Sequence[int], compressed: Sequence[int]) -> int | None:
    """The first position where the two generations differ; None when they are equal."""
    for i, (a, b) in enumerate(zip(golden, compressed, strict=False)):
        if a != b:
            return i
    return None if len(golden) == len(compressed) else min(len(golden), len(compressed))


def _ngrams(tokens: Sequence[int], n: int) -> list[tuple[int, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def distinct(tokens: Sequence[int], n: int) -> float | None:
    grams = _ngrams(tokens, n)
    return len(set(grams)) / len(grams) if grams else None


def repeated_rate(tokens: Sequence[int], n: int) -> float | None:
    grams = _ngrams(tokens, n)
    if not grams:
        return None
    seen: set[tuple[int, ...]] = set()
    repeats = 0
    for gram in grams:
        repeats += gram in seen
        seen.add(gram)
    return repeats / len(grams)


def longest_repeated_span(tokens: Sequence[int]) -> int:
    """Longest stretch that occurs twice or more (at different starts; they may overlap): for every shift d the
    longest run of positions i with tokens[i] == tokens[i + d]. O(n²) for n tokens."""
    values = np.asarray(tokens)
    best = 0
    for shift in range(1, len(values)):
        equal = values[:-shift] == values[shift:]
        run = 0
        for same in equal:
            run = run + 1 if same else 0
            best = max(best, run)
    return best


def repetition(tokens: Sequence[int]) -> dict[str, float | None]:
    return {
        "distinct_1": distinct(tokens, 1),
        "distinct_2": distinct(tokens, 2),
        "repeated_3gram_rate": repeated_rate(tokens, 3),
        "repeated_4gram_rate": repeated_rate(tokens, 4),
        "longest_repeated_span": float(longest_repeated_span(tokens)),
    }


REPETITION_KEYS = tuple(repetition([]))


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def text_scores(
    hypotheses: Sequence[str], references: Sequence[str]
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Corpus BLEU and chrF, mean ROUGE-L F of `hypotheses` against one reference each, and per sample the
    sentence BLEU and ROUGE-L F."""
    import sacrebleu
    from rouge_score import rouge_scorer

    hyps, refs = list(hypotheses), list(references)
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    rouge = np.array([scorer.score(r, h)["rougeL"].fmeasure for h, r in zip(hyps, refs, strict=True)])
    bleu = np.array(
        [
            sacrebleu.sentence_bleu(h, [r], tokenize=BLEU_TOKENIZER).score
            for h, r in zip(hyps, refs, strict=True)
        ]
    )
    corpus = {
        "bleu": float(sacrebleu.corpus_bleu(hyps, [refs], tokenize=BLEU_TOKENIZER).score),
        "chrf": float(sacrebleu.corpus_chrf(hyps, [refs]).score),
        "rouge_l": float(rouge.mean()) if rouge.size else 0.0,
    }
    return corpus, {"bleu": bleu, "rouge_l": rouge}


def compare_generations(
    golden_tokens: Sequence[Sequence[int]],
    compressed_tokens: Sequence[Sequence[int]],
    golden_texts: Sequence[str],
    compressed_texts: Sequence[str],
    new_tokens: int,
    reference_texts: Sequence[str] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The generation block (JSON-safe numbers) and per-sample values (name → array of length N).

    Block: n_samples, exact_match_rate, first_divergence (histogram over positions 0..new_tokens − 1,
    n_identical, mean and median position of the diverged samples), bleu_vs_golden, chrf_vs_golden,
    rouge_l_vs_golden; with references, bleu/chrf/rouge_l of each model against them and the drops
    (golden − compressed); repetition {golden, compressed, delta} of REPETITION_KEYS.
    Per sample: exact_match (0/1), first_divergence (NaN when identical), bleu_vs_golden, rouge_l_vs_golden,
    and with references bleu_golden / bleu_compressed (against the references)."""
    n = len(golden_tokens)
    divergence = [
        first_divergence(list(g), list(c)) for g, c in zip(golden_tokens, compressed_tokens, strict=True)
    ]
    diverged = [d for d in divergence if d is not None]
    histogram = np.bincount(np.asarray(diverged, dtype=np.int64), minlength=new_tokens)[:new_tokens]
    vs_golden, per_pair = text_scores(compressed_texts, golden_texts)
    block: dict[str, Any] = {
        "n_samples": n,
        "new_tokens": new_tokens,
        "exact_match_rate": (n - len(diverged)) / n if n else None,
        "first_divergence": {
            "histogram": histogram.astype(int).tolist(),
            "n_identical": n - len(diverged),
            "mean": float(np.mean(diverged)) if diverged else None,
            "median": float(np.median(diverged)) if diverged else None,
        },
        "bleu_vs_golden": vs_golden["bleu"],
        "chrf_vs_golden": vs_golden["chrf"],
        "rouge_l_vs_golden": vs_golden["rouge_l"],
    }
    per_sample: dict[str, np.ndarray] = {
        "exact_match": np.array([d is None for d in divergence], dtype=np.float64),
        "first_divergence": np.array([np.nan if d is None else d for d in divergence], dtype=np.float64),
        "bleu_vs_golden": per_pair["bleu"],
        "rouge_l_vs_golden": per_pair["rouge_l"],
    }
    if reference_texts is not None:
        golden_ref, golden_rows = text_scores(golden_texts, reference_texts)
        compressed_ref, compressed_rows = text_scores(compressed_texts, reference_texts)
        for key in ("bleu", "chrf", "rouge_l"):
            block[f"{key}_golden_vs_reference"] = golden_ref[key]
            block[f"{key}_compressed_vs_reference"] = compressed_ref[key]
            block[f"{key}_drop"] = golden_ref[key] - compressed_ref[key]
        per_sample["bleu_golden"] = golden_rows["bleu"]
        per_sample["bleu_compressed"] = compressed_rows["bleu"]
    reps = {
        side: [repetition(list(t)) for t in tokens]
        for side, tokens in (("golden", golden_tokens), ("compressed", compressed_tokens))
    }
    summary: dict[str, dict[str, float | None]] = {"golden": {}, "compressed": {}, "delta": {}}
    for key in REPETITION_KEYS:
        g = _mean([r[key] for r in reps["golden"]])
        c = _mean([r[key] for r in reps["compressed"]])
        summary["golden"][key], summary["compressed"][key] = g, c
        summary["delta"][key] = None if g is None or c is None else c - g
    block["repetition"] = summary
    return block, per_sample
