"""Sequence fidelity (worker/engine/metrics/sequence.py) for outputs (N, T, D).

all-MiniLM-L6-v2's fp32 encoder (golden) against a third party's int8 ONNX of it (tests/support/
pretrained.py), both giving last_hidden_state: the engine's token cosine/SQNR (masked by the attention
mask), pooled embeddings and neighbour agreement against numpy / scipy / scikit-learn computed here from
the raw outputs of plain onnxruntime sessions. A fast test checks the histogram percentiles and the
neighbour search on random data."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from scipy.spatial.distance import cdist
from sklearn.neighbors import NearestNeighbors

from tests.support.pretrained_minilm import MINILM_HIDDEN, minilm_fp32_onnx, minilm_int8_onnx, tokenize
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders import OnnxRunner, load_model
from worker.engine.metrics.sequence import SequenceAccumulator, neighbours

BATCH = 5  # 12 sentences: batches of 5, 5 and 2, each padded to the longest sentence of the dataset

SENTENCES = (
    "A man is playing a guitar on stage.",
    "A musician performs a song on his guitar in front of an audience.",
    "The cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
    "The stock market fell sharply this morning.",
    "Share prices dropped steeply when trading opened.",
    "How do I reset my password?",
    "I forgot my password and need to change it.",
    "It is raining heavily in the city today.",
    "There is a downpour over town this afternoon.",
    "Quantized models run faster on phones.",
    "Compressing a network to int8 makes it quicker on mobile devices.",
)


def _run(path: Path, feeds: Mapping[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    n = len(next(iter(feeds.values())))
    parts = [
        session.run(None, {k: v[i : i + BATCH] for k, v in feeds.items()})[0] for i in range(0, n, BATCH)
    ]
    return np.concatenate(parts).astype(np.float64)


def _knn(x: np.ndarray, k: int) -> list[set[int]]:
    """The k nearest other rows by cosine, from scikit-learn (self removed)."""
    _, idx = NearestNeighbors(n_neighbors=k + 1, metric="cosine").fit(x).kneighbors(x)
    return [set(row[row != i].tolist()[:k]) for i, row in enumerate(idx)]


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "first"])
def test_minilm_int8_sequence_fidelity(tmp_path_factory: pytest.TempPathFactory, pooling: str) -> None:
    folder = tmp_path_factory.mktemp(f"minilm_seq_{pooling}")
    fp32, int8 = minilm_fp32_onnx(folder), minilm_int8_onnx()
    feeds = tokenize(SENTENCES)
    golden, compressed = load_model(fp32, "onnx"), load_model(int8, "onnx")
    try:
        params = FidelityParams(batch_size=BATCH, top_k=3, pooling=pooling)  # type: ignore[arg-type]
        report = compare_models(golden, compressed, feeds, None, params)
    finally:
        for runner in (golden, compressed):
            if isinstance(runner, OnnxRunner):
                runner.close()
    doc = report.sequence_dict()
    assert doc is not None and report.classes_dict() is None
    seq = doc["outputs"][MINILM_HIDDEN]

    g, c = _run(fp32, feeds), _run(int8, feeds)
    mask = feeds["attention_mask"] != 0
    assert not mask.all(), "the sentences differ in length, so some tokens are padding"
    gt, ct = g[mask], c[mask]
    cos = 1 - np.array([cdist(a[None], b[None], "cosine")[0, 0] for a, b in zip(gt, ct, strict=True)])
    sqnr = 10 * np.log10((gt**2).sum(axis=1) / ((gt - ct) ** 2).sum(axis=1))
    assert seq["masked"] and seq["n_tokens"] == mask.sum() and seq["n_samples"] == len(SENTENCES)
    assert seq["token_cosine"]["mean"] == pytest.approx(cos.mean(), abs=1e-6)
    assert seq["token_cosine"]["min"] == pytest.approx(cos.min(), abs=1e-6)
    assert seq["token_sqnr_db"]["mean"] == pytest.approx(sqnr.mean(), abs=1e-4)
    assert seq["token_sqnr_db"]["min"] == pytest.approx(sqnr.min(), abs=1e-4)
    for q in (5, 50, 95):
        one_minus = 1 - np.percentile(cos, q, method="inverted_cdf")
        assert 1 - seq["token_cosine"]["percentiles"][f"p{q}"] == pytest.approx(one_minus, rel=0.012)
        assert seq["token_sqnr_db"]["percentiles"][f"p{q}"] == pytest.approx(
            np.percentile(sqnr, q, method="inverted_cdf"), abs=0.021
        )
    # Padding matters: the same metrics over every position differ.
    all_cos = (g * c).sum(-1) / (np.linalg.norm(g, axis=-1) * np.linalg.norm(c, axis=-1))
    assert abs(all_cos.mean() - cos.mean()) > 1e-6

    m = mask[:, :, None].astype(np.float64)
    if pooling == "mean":
        pg, pc = (g * m).sum(1) / m.sum(1), (c * m).sum(1) / m.sum(1)
    else:
        pg, pc = g[:, 0], c[:, 0]
    pooled_cos = 1 - np.diag(cdist(pg, pc, "cosine"))
    pooled = seq["pooled"]
    assert pooled["pooling"] == pooling and pooled["neighbour_k"] == 3
    assert pooled["cosine_mean"] == pytest.approx(pooled_cos.mean(), abs=1e-6)
    assert pooled["cosine_min"] == pytest.approx(pooled_cos.min(), abs=1e-6)
    kg, kc = _knn(pg, 3), _knn(pc, 3)
    n1g, n1c = _knn(pg, 1), _knn(pc, 1)
    assert pooled["neighbour_top1_agreement"] == pytest.approx(
        np.mean([a == b for a, b in zip(n1g, n1c, strict=True)])
    )
    overlap = np.mean([len(a & b) / 3 for a, b in zip(kg, kc, strict=True)])
    assert pooled["neighbour_topk_overlap"] == pytest.approx(overlap, abs=1e-12)


def test_token_percentiles_and_neighbours_against_numpy() -> None:
    rng = np.random.default_rng(0)
    g = rng.normal(size=(40, 7, 16))
    c = g + rng.normal(scale=rng.uniform(0.01, 0.5, size=(40, 7, 1)), size=g.shape)
    mask = (rng.uniform(size=(40, 7)) > 0.3).astype(np.int64)
    mask[:, 0] = 1
    acc = SequenceAccumulator(pooling="mean", top_k=4, block=7)  # blocks that do not divide N
    for start in range(0, 40, 9):
        acc.update(g[start : start + 9], c[start : start + 9], mask[start : start + 9])
    out = acc.to_dict()
    keep = mask != 0
    gt, ct = g[keep], c[keep]
    cos = (gt * ct).sum(1) / (np.linalg.norm(gt, axis=1) * np.linalg.norm(ct, axis=1))
    sqnr = 10 * np.log10((gt**2).sum(1) / ((gt - ct) ** 2).sum(1))
    for q in (1, 25, 50, 75, 99):
        assert 1 - out["token_cosine"]["percentiles"][f"p{q}"] == pytest.approx(
            1 - np.percentile(cos, q, method="inverted_cdf"), rel=0.012
        )
        assert out["token_sqnr_db"]["percentiles"][f"p{q}"] == pytest.approx(
            np.percentile(sqnr, q, method="inverted_cdf"), abs=0.021
        )
    m = keep[:, :, None]
    pg, pc = (g * m).sum(1) / m.sum(1), (c * m).sum(1) / m.sum(1)
    kg, kc = _knn(pg, 4), _knn(pc, 4)
    assert [set(r.tolist()) for r in neighbours(pg, 4, block=7)] == kg
    overlap = np.mean([len(a & b) / 4 for a, b in zip(kg, kc, strict=True)])
    assert out["pooled"]["neighbour_topk_overlap"] == pytest.approx(overlap, abs=1e-12)
    assert out["pooled"]["neighbour_topk_overlap"] < 1.0  # the noise moves some neighbours
