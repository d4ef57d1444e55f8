"""Scores of generated text: BLEU, chrF and ROUGE-L equal sacrebleu and rouge-score called directly on the same
strings; repetition and first divergence equal plain implementations written here from the definitions.

The texts are sentences of numpy's docstrings (golden) and copies with words dropped, swapped and repeated
(compressed), tokenised by word, so every score lands strictly between its extremes."""

from __future__ import annotations

import inspect
from collections import Counter

import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer

from worker.engine.tasks.text_metrics import compare_generations, first_divergence, repetition


def _sentences() -> list[list[str]]:
    text = " ".join(inspect.getdoc(f) or "" for f in (np.mean, np.sum, np.sort, np.argmax))
    words = [w for w in text.split() if w.isascii()]
    return [words[i : i + 14] for i in range(0, 14 * 24, 14)]


def _damaged(words: list[str], rng: np.random.Generator) -> list[str]:
    kind = rng.integers(0, 4)
    out = list(words)
    if kind == 1:
        out[int(rng.integers(3, 10))] = "the"
    elif kind == 2:
        cut = int(rng.integers(4, 12))
        out = out[:cut] + out[cut - 3 : cut] + out[cut:]  # a repeated stretch
    elif kind == 3:
        out = out[: int(rng.integers(5, 13))]
    return out


@pytest.fixture(scope="module")
def texts() -> dict[str, list[list[str]]]:
    rng = np.random.default_rng(3)
    golden = _sentences()
    compressed = [_damaged(s, rng) for s in golden]
    references = [_damaged(s, rng) for s in golden]
    return {"golden": golden, "compressed": compressed, "references": references}


def _ids(sentences: list[list[str]]) -> tuple[list[list[int]], dict[str, int]]:
    vocabulary: dict[str, int] = {}
    return [[vocabulary.setdefault(w, len(vocabulary)) for w in s] for s in sentences], vocabulary


def _plain_repetition(tokens: list[int]) -> dict[str, float | None]:
    def grams(n: int) -> list[tuple[int, ...]]:
        return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]

    def distinct(n: int) -> float | None:
        g = grams(n)
        return len(Counter(g)) / len(g) if g else None

    def repeated(n: int) -> float | None:
        g = grams(n)
        return sum(count - 1 for count in Counter(g).values()) / len(g) if g else None

    longest = 0
    for length in range(1, len(tokens)):
        if any(count > 1 for count in Counter(grams(length)).values()):
            longest = length
    return {
        "distinct_1": distinct(1),
        "distinct_2": distinct(2),
        "repeated_3gram_rate": repeated(3),
        "repeated_4gram_rate": repeated(4),
        "longest_repeated_span": float(longest),
    }


def test_scores_equal_sacrebleu_and_rouge_score_on_the_strings(texts: dict[str, list[list[str]]]) -> None:
    everything, _ = _ids(texts["golden"] + texts["compressed"])
    golden_ids, compressed_ids = everything[: len(texts["golden"])], everything[len(texts["golden"]) :]
    golden = [" ".join(s) for s in texts["golden"]]
    compressed = [" ".join(s) for s in texts["compressed"]]
    references = [" ".join(s) for s in texts["references"]]
    block, rows = compare_generations(golden_ids, compressed_ids, golden, compressed, 20, references)

    assert block["bleu_vs_golden"] == pytest.approx(
        sacrebleu.corpus_bleu(compressed, [golden]).score, rel=1e-12
    )
    assert block["chrf_vs_golden"] == pytest.approx(sacrebleu.CHRF().corpus_score(compressed, [golden]).score)
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    rouge = [scorer.score(g, c)["rougeL"].fmeasure for g, c in zip(golden, compressed, strict=True)]
    assert np.allclose(rows["rouge_l_vs_golden"], rouge) and block["rouge_l_vs_golden"] == pytest.approx(
        np.mean(rouge)
    )
    bleu = sacrebleu.metrics.BLEU(effective_order=True)
    sentence = [bleu.sentence_score(c, [g]).score for g, c in zip(golden, compressed, strict=True)]
    assert np.allclose(rows["bleu_vs_golden"], sentence)
    for side, hyps in (("golden", golden), ("compressed", compressed)):
        assert block[f"bleu_{side}_vs_reference"] == pytest.approx(
            sacrebleu.corpus_bleu(hyps, [references]).score
        )
        assert block[f"chrf_{side}_vs_reference"] == pytest.approx(
            sacrebleu.corpus_chrf(hyps, [references]).score
        )
    assert block["bleu_drop"] == pytest.approx(
        block["bleu_golden_vs_reference"] - block["bleu_compressed_vs_reference"]
    )
    assert 0 < block["bleu_vs_golden"] < 100 and 0 < block["rouge_l_vs_golden"] < 1


def test_exact_match_and_first_divergence_follow_their_definitions(texts: dict[str, list[list[str]]]) -> None:
    everything, _ = _ids(texts["golden"] + texts["compressed"])
    golden_ids, compressed_ids = everything[: len(texts["golden"])], everything[len(texts["golden"]) :]
    strings = [" ".join(s) for s in texts["golden"] + texts["compressed"]]
    block, rows = compare_generations(golden_ids, compressed_ids, strings[:24], strings[24:], 20)
    expected = []
    for g, c in zip(golden_ids, compressed_ids, strict=True):
        m = min(len(g), len(c))
        differ = np.flatnonzero(np.asarray(g[:m]) != np.asarray(c[:m]))
        expected.append(int(differ[0]) if differ.size else (None if len(g) == len(c) else m))
    assert [None if np.isnan(v) else int(v) for v in rows["first_divergence"]] == expected
    identical = sum(e is None for e in expected)
    assert 0 < identical < len(expected)
    assert block["exact_match_rate"] == pytest.approx(identical / len(expected))
    assert rows["exact_match"].tolist() == [float(e is None) for e in expected]
    hist = block["first_divergence"]["histogram"]
    assert sum(hist) == len(expected) - identical == len(expected) - block["first_divergence"]["n_identical"]
    assert all(hist[p] == sum(e == p for e in expected) for p in range(20))
    assert first_divergence([1, 2], [1, 2]) is None and first_divergence([1, 2], [1, 2, 3]) == 2
    assert "bleu_drop" not in block  # no references, no scores against them


def test_repetition_equals_the_plain_definitions(texts: dict[str, list[list[str]]]) -> None:
    ids, _ = _ids(texts["compressed"] + [["a", "b", "a", "b", "a"], ["x"], []])
    for tokens in ids:
        assert repetition(tokens) == pytest.approx(_plain_repetition(tokens)), tokens
    rng = np.random.default_rng(0)
    for _ in range(50):
        tokens = rng.integers(0, 4, int(rng.integers(0, 30))).tolist()
        assert repetition(tokens) == pytest.approx(_plain_repetition(tokens)), tokens
    golden_ids, _ = _ids(texts["golden"])
    block, _ = compare_generations(golden_ids, ids[:24], [""] * 24, [""] * 24, 20)
    want = np.mean([_plain_repetition(t)["longest_repeated_span"] for t in ids[:24]])
    assert block["repetition"]["compressed"]["longest_repeated_span"] == pytest.approx(want)
    assert block["repetition"]["delta"]["distinct_1"] == pytest.approx(
        np.mean([_plain_repetition(t)["distinct_1"] for t in ids[:24]])
        - np.mean([_plain_repetition(t)["distinct_1"] for t in golden_ids])
    )
