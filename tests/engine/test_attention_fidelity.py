"""Attention-map fidelity of ONNX pairs (worker/engine/attention/, through attention_fidelity_of).

all-MiniLM-L6-v2's fp32 encoder (golden) against a third party's int8 ONNX of it (tests/support/pretrained_*.py):
the engine's per layer x head KL and JS against scipy (rel_entr, jensenshannon squared) computed here on
softmax outputs captured with plain onnxruntime sessions, with and without the attention mask. Fast tests
check the pairing notes and a synthetic pair on random logits."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr

from tests.support.attention_torch import scipy_divergences
from tests.support.pretrained_minilm import minilm_fp32_onnx, minilm_int8_onnx, tokenize
from worker.engine.attention import AttentionOutcome, attention_fidelity_of, attention_softmaxes

SENTENCES = (
    "A man is playing a guitar on stage.",
    "The cat is sleeping on the sofa.",
    "The stock market fell sharply this morning and traders were worried about the outlook.",
    "How do I reset my password?",
    "It is raining heavily in the city today.",
    "Quantized models run faster on phones, but do their attention maps stay the same?",
    "Hello.",
)


def onnx_softmaxes(path: Path, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Every Softmax output of the graph, in node order, from one onnxruntime run (optimizations off)."""
    model = onnx.load(str(path))
    names = [n.output[0] for n in model.graph.node if n.op_type == "Softmax"]
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return [np.asarray(a, dtype=np.float64) for a in session.run(names, dict(feeds))]


def onnx_pair(
    golden: Path, compressed: Path, arrays: Mapping[str, np.ndarray], **kwargs: Any
) -> AttentionOutcome:
    return attention_fidelity_of([(golden, "onnx"), (compressed, "onnx")], arrays, **kwargs)


@pytest.mark.slow
def test_minilm_int8_attention_matches_scipy(tmp_path: Path) -> None:
    fp32, int8 = minilm_fp32_onnx(tmp_path), minilm_int8_onnx()
    feeds = tokenize(SENTENCES)
    mask = feeds["attention_mask"] != 0
    assert not mask.all(), "the sentences differ in length, so some query positions are padding"
    assert attention_softmaxes(onnx.load(str(fp32))) and attention_softmaxes(onnx.load(str(int8)))

    g, c = onnx_softmaxes(fp32, feeds), onnx_softmaxes(int8, feeds)
    assert len(g) == 6 and all(a.shape == (len(SENTENCES), 12, mask.shape[1], mask.shape[1]) for a in g)
    kl_masked, js_masked = scipy_divergences(g, c, mask)
    kl_all, js_all = scipy_divergences(g, c, np.ones_like(mask))

    seen: list[tuple[int, int]] = []
    # A budget of 4 MiB holds 2 of these sentences' maps: the engine folds 4 batches.
    outcome = onnx_pair(fp32, int8, feeds, memory_budget_mb=4, on_progress=lambda d, t: seen.append((d, t)))
    doc = outcome.document
    assert doc is not None, outcome.note
    assert len(seen) > 2 and seen[-1] == (len(SENTENCES), len(SENTENCES))
    assert doc["heads"] == 12 and len(doc["layers"]) == 6
    assert doc["mask_input"] == "attention_mask" and doc["n_queries"] == int(mask.sum())
    kl = np.array([layer["kl"] for layer in doc["layers"]])
    js = np.array([layer["js"] for layer in doc["layers"]])
    # Measured: within 3e-12 of scipy (the engine batches 2 sentences at a time, the reference all 7).
    np.testing.assert_allclose(kl, kl_masked, rtol=1e-9)
    np.testing.assert_allclose(js, js_masked, rtol=1e-9)
    assert np.all(kl > 0) and np.all(js > 0) and np.all(js <= np.log(2))
    # The padded queries count: the unmasked means differ from the masked ones by more than the tolerance.
    assert np.max(np.abs(kl_all / kl_masked - 1)) > 1e-2

    # Without a mask input (renamed: bound by position) every query position counts.
    unmasked = {
        "input_ids": feeds["input_ids"],
        "am": feeds["attention_mask"],
        "token_type_ids": feeds["token_type_ids"],
    }
    doc_all = onnx_pair(fp32, int8, unmasked).document
    assert doc_all is not None and doc_all["mask_input"] is None
    assert doc_all["n_queries"] == mask.size
    np.testing.assert_allclose([layer["kl"] for layer in doc_all["layers"]], kl_all, rtol=1e-9)
    np.testing.assert_allclose([layer["js"] for layer in doc_all["layers"]], js_all, rtol=1e-9)


def _attention_graph(path: Path, softmaxes: int, scale: float, rank: int = 4) -> Path:
    """x [N, 2, 3, 5] (or 2-D) -> Mul(scale) -> `softmaxes` chained Softmax(axis=-1) -> y."""
    shape: list[str | int | None] = ["N", 2, 3, 5] if rank == 4 else ["N", 5]
    nodes = [helper.make_node("Mul", ["x", "s"], ["t0"], name="scale")]
    for i in range(softmaxes):
        nodes.append(helper.make_node("Softmax", [f"t{i}"], [f"t{i + 1}"], name=f"attn{i}", axis=-1))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(f"t{softmaxes}", TensorProto.FLOAT, shape)],
        [helper.make_tensor("s", TensorProto.FLOAT, [], [scale])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def test_synthetic_pair_matches_scipy_and_bad_pairs_give_notes(tmp_path: Path) -> None:
    x = np.random.default_rng(0).normal(size=(9, 2, 3, 5)).astype(np.float32)
    golden = _attention_graph(tmp_path / "g.onnx", 1, 1.0)
    compressed = _attention_graph(tmp_path / "c.onnx", 1, 0.8)
    doc = onnx_pair(golden, compressed, {"x": x}, memory_budget_mb=1e-3).document  # 1 sample a batch
    assert doc is not None and doc["heads"] == 2 and doc["mask_input"] is None
    p = np.exp(x.astype(np.float64)) / np.exp(x.astype(np.float64)).sum(-1, keepdims=True)
    q = np.exp(0.8 * x.astype(np.float64)) / np.exp(0.8 * x.astype(np.float64)).sum(-1, keepdims=True)
    np.testing.assert_allclose(doc["layers"][0]["kl"], rel_entr(p, q).sum(-1).mean(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_allclose(
        doc["layers"][0]["js"], (jensenshannon(p, q, axis=-1) ** 2).mean(axis=(0, 2)), rtol=1e-5
    )
    assert doc["layers"][0]["golden_node"] == "attn0"

    two = onnx_pair(golden, _attention_graph(tmp_path / "two.onnx", 2, 1.0), {"x": x})
    assert two.document is None and two.note is not None and "1 and the compressed graph 2" in two.note
    flat = _attention_graph(tmp_path / "flat.onnx", 1, 1.0, rank=2)
    assert not attention_softmaxes(onnx.load(str(flat)))  # a 2-D softmax (a classifier's) is not attention
    assert onnx_pair(flat, flat, {"x": x[:, 0, 0]}) == AttentionOutcome(None, None)
