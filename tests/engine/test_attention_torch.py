"""Attention-map fidelity through the one entry point (worker/engine/attention/pairs.py: attention_fidelity_of)
on torch.export programs (torch_side.py), and the notes for what cannot be read (fused ONNX attention
operators, TorchScript) or nothing at all (a classifier's final softmax in any format).

The model (tests/support/attention_torch.py) has one block of each attention form the torch side reads: a
hand-written softmax, nn.TransformerEncoderLayer (fused scaled_dot_product_attention, decomposed by the
engine) and nn.MultiheadAttention with need_weights=True (a 3-D softmax, heads folded into the batch). The
compressed copy has its weight matrices rounded to a 4-bit per-tensor grid. The reference recomputes every
block's attention probabilities from the weights in float64 numpy and takes KL with scipy's rel_entr and JS
as scipy's jensenshannon squared (nats), over the query positions the attention mask keeps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from tests.support.attention_torch import (
    ManualAttention,
    SoftmaxCNN,
    export_encoder,
    numpy_attention,
    round_weights,
    sample_inputs,
    scipy_divergences,
    tiny_encoder,
)
from worker.engine.attention import attention_fidelity_of, attention_softmaxes, fused_attention_ops
from worker.engine.attention.torch_side import TORCHSCRIPT_NOTE, fused_torch_ops, torchscript_attention
from worker.engine.formats.exporters import export_onnx, export_torch_program, export_torchscript
from worker.engine.loaders import TorchRunner, load_model

N_SAMPLES = 13


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[np.ndarray], list[np.ndarray]]:
    """golden.pt2, compressed.pt2 and their numpy attention maps on sample_inputs(N_SAMPLES)."""
    folder = tmp_path_factory.mktemp("attention_torch")
    golden, compressed = tiny_encoder(), round_weights(tiny_encoder())
    x, mask = sample_inputs(N_SAMPLES)
    return (
        export_encoder(golden, folder / "golden.pt2"),
        export_encoder(compressed, folder / "compressed.pt2"),
        numpy_attention(golden, x, mask),
        numpy_attention(compressed, x, mask),
    )


def test_pt2_pair_matches_numpy_and_scipy(
    pair: tuple[Path, Path, list[np.ndarray], list[np.ndarray]], monkeypatch: pytest.MonkeyPatch
) -> None:
    golden, compressed, p_maps, q_maps = pair
    models = [(golden, "torch_export"), (compressed, "torch_export")]
    x, mask = sample_inputs(N_SAMPLES)
    keep = mask != 0
    assert not keep.all(), "some query positions are padding"
    seen: list[tuple[int, int]] = []
    # 0.02 MiB holds 4 samples' maps (3 layers x 4 heads x 6 x 6 x 56 bytes each): the engine folds 5 batches.
    outcome = attention_fidelity_of(
        models, {"x": x, "attention_mask": mask}, memory_budget_mb=0.02,
        on_progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    doc = outcome.document
    assert doc is not None, outcome.note
    assert len(seen) > 2 and seen[0] == (0, N_SAMPLES) and seen[-1] == (N_SAMPLES, N_SAMPLES)
    assert doc["heads"] == 4 and doc["notes"] == []
    assert [layer["golden_node"].split(":")[0] for layer in doc["layers"]] == [
        "manual",
        "layer.self_attn",
        "mha",
    ]
    assert doc["mask_input"] == "attention_mask" and doc["n_queries"] == int(keep.sum())
    kl_ref, js_ref = scipy_divergences(p_maps, q_maps, keep)
    kl = np.array([layer["kl"] for layer in doc["layers"]])
    js = np.array([layer["js"] for layer in doc["layers"]])
    # Measured: within 5e-6 relative of the float64 reference (torch computes the maps in float32).
    np.testing.assert_allclose(kl, kl_ref, rtol=5e-5)
    np.testing.assert_allclose(js, js_ref, rtol=5e-5)
    assert np.all(kl > 1e-4) and np.all(js <= np.log(2))

    # The mask input renamed: bound by position, not recognised, so every query position counts. The
    # programs come loaded (as the fidelity job's runners hold them): no file is loaded again.
    runners = [load_model(path, "torch_export") for path, _ in models]
    programs = [runner.program for runner in runners if isinstance(runner, TorchRunner)]

    def no_reload(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model was loaded again")

    monkeypatch.setattr("worker.engine.attention.torch_side.load_model", no_reload)
    unmasked = attention_fidelity_of(models, {"x": x, "am": mask}, loaded=programs).document
    assert unmasked is not None and unmasked["mask_input"] is None and unmasked["n_queries"] == mask.size
    kl_all, js_all = scipy_divergences(p_maps, q_maps, np.ones_like(keep))
    np.testing.assert_allclose([layer["kl"] for layer in unmasked["layers"]], kl_all, rtol=5e-5)
    np.testing.assert_allclose([layer["js"] for layer in unmasked["layers"]], js_all, rtol=5e-5)
    assert np.max(np.abs(kl_all / kl_ref - 1)) > 1e-2, "the padded queries change the means"


def _fused_onnx(path: Path) -> Path:
    """x [N, 6, 16] -> com.microsoft Attention (4 heads, packed QKV weights) -> y: a graph with no Softmax."""
    rng = np.random.default_rng(0)
    weight = helper.make_tensor("w", TensorProto.FLOAT, [16, 48], rng.normal(size=16 * 48).tolist())
    bias = helper.make_tensor("b", TensorProto.FLOAT, [48], np.zeros(48).tolist())
    node = helper.make_node(
        "Attention", ["x", "w", "b"], ["y"], name="attn", domain="com.microsoft", num_heads=4
    )
    graph = helper.make_graph(
        [node], "fused",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6, 16])],
        [weight, bias],
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    onnx.save(model, str(path))
    return path


def _unfused_onnx(path: Path) -> Path:
    """x [N, 4, 6, 6] -> Softmax(axis=-1) -> y: one attention softmax."""
    node = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1)
    graph = helper.make_graph(
        [node], "unfused",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 6, 6])],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_fused_onnx_attention_gets_a_note(tmp_path: Path) -> None:
    fused = _fused_onnx(tmp_path / "fused.onnx")
    x = {"x": np.zeros((1, 6, 16), dtype=np.float32)}
    assert not attention_softmaxes(onnx.load(str(fused)))
    assert fused_attention_ops(onnx.load(str(fused))) == {"com.microsoft:Attention": 1}
    both = attention_fidelity_of([(fused, "onnx"), (fused, "onnx")], x)
    note = both.note
    assert both.document is None and note is not None
    assert "golden graph fuses attention" in note and "compressed graph" in note
    assert "com.microsoft:Attention x1" in note and "transformer optimizer" in note
    # An unfused golden graph against a fused compressed one: the count note says why they do not pair.
    outcome = attention_fidelity_of([(_unfused_onnx(tmp_path / "unfused.onnx"), "onnx"), (fused, "onnx")], x)
    assert outcome.document is None and outcome.note is not None
    assert "golden graph has 1 and the compressed graph 0" in outcome.note
    assert "the compressed graph fuses attention" in outcome.note
    # A graph with neither: nothing to say.
    plain = tmp_path / "plain.onnx"
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    )  # fmt: skip
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(plain))
    nothing = attention_fidelity_of([(plain, "onnx"), (plain, "onnx")], {"x": np.zeros((1, 4), np.float32)})
    assert (nothing.document, nothing.note) == (None, None)


def test_fused_torch_ops_are_named() -> None:
    """An op torch does not decompose into a softmax (the fast path's native multi-head attention)."""
    graph = torch.fx.Graph()
    q = graph.placeholder("q")
    graph.output(graph.call_function(torch.ops.aten._native_multi_head_attention.default, (q,)))
    assert fused_torch_ops(graph) == {"aten._native_multi_head_attention.default": 1}


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_torchscript_gets_a_note_once(
    pair: tuple[Path, Path, list[np.ndarray], list[np.ndarray]], tmp_path: Path
) -> None:
    x, mask = sample_inputs(2)
    arrays = {"x": x, "attention_mask": mask}
    traced = torch.jit.trace(tiny_encoder(), (torch.from_numpy(x), torch.from_numpy(mask)), check_trace=False)
    path = tmp_path / "encoder.pt"
    torch.jit.save(traced, str(path))
    outcome = attention_fidelity_of([(path, "torchscript"), (path, "torchscript")], arrays)
    assert outcome.document is None and outcome.note == f"both models: {TORCHSCRIPT_NOTE}"
    assert "torch.export" in outcome.note
    # A .pt2 golden program with attention against a TorchScript compressed model: no capture, the note.
    mixed = attention_fidelity_of([(pair[0], "torch_export"), (path, "torchscript")], arrays)
    assert mixed.document is None and mixed.note == f"the compressed model: {TORCHSCRIPT_NOTE}"
    relu = torch.jit.script(torch.nn.ReLU())
    torch.jit.save(relu, str(tmp_path / "relu.pt"))
    nothing = attention_fidelity_of([(tmp_path / "relu.pt", "torchscript")] * 2, arrays)
    assert (nothing.document, nothing.note) == (None, None)


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
def test_a_classifier_softmax_is_not_attention(tmp_path: Path) -> None:
    """The digits CNN ending in torch.softmax, exported to every format the way uploads are made
    (worker/engine/formats/exporters.py): no note and no document, whatever the format."""
    torch.manual_seed(0)
    model = SoftmaxCNN().eval()
    sample = np.random.default_rng(0).random((2, 1, 8, 8), dtype=np.float32)
    files = {
        "torchscript": export_torchscript(model, sample, tmp_path / "cnn.pt"),
        "torch_export": export_torch_program(model, sample, tmp_path / "cnn.pt2"),
        "onnx": export_onnx(model, sample, tmp_path / "cnn.onnx"),
    }
    script = torch.jit.load(str(files["torchscript"]))
    assert any("softmax" in node.kind() for node in script.inlined_graph.nodes()), "the graph has a softmax"
    for fmt, path in files.items():
        outcome = attention_fidelity_of([(path, fmt), (path, fmt)], {"input": sample})
        assert (outcome.document, outcome.note) == (None, None), fmt
    # The graph's own types decide when it has them (a trace in memory): 2-D here, 4-D in attention.
    assert not torchscript_attention(torch.jit.trace(model, (torch.from_numpy(sample),)))
    x, mask = sample_inputs(2)
    manual = torch.jit.trace(ManualAttention().eval(), (torch.from_numpy(x), torch.from_numpy(mask) != 0))
    assert torchscript_attention(manual)


def test_unpaired_programs_give_a_note(
    pair: tuple[Path, Path, list[np.ndarray], list[np.ndarray]], tmp_path: Path
) -> None:
    """A .pt2 against an ONNX graph with a different number of attention softmaxes (1 vs 3): a note."""
    x, mask = sample_inputs(3)
    outcome = attention_fidelity_of(
        [(pair[0], "torch_export"), (_unfused_onnx(tmp_path / "one.onnx"), "onnx")],
        {"x": x, "attention_mask": mask},
    )
    assert outcome.document is None and outcome.note is not None
    assert "golden graph has 3 and the compressed graph 1" in outcome.note
