"""Local values of a structurally matched pair whose layers do not all line up (worker/engine/layer_profile
run.py / onnx_local.py): a pair whose golden and compressed tensors differ in shape, or whose sub-graph
fails to run, is left out of the local sub-graphs instead of costing every layer its local value."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.support.pretrained_minilm import minilm_fp32_onnx, minilm_int8_onnx, tokenize
from worker.engine.layer_profile import profile_layers
from worker.engine.layer_profile.accumulate import LayerPair
from worker.engine.layer_profile.onnx_local import failing_layer


def test_failing_layer_reads_the_prefix_of_the_failing_node() -> None:
    pairs = [LayerPair("a", "a2", "MatMul"), LayerPair("b", "b2", "MatMul")]
    message = (
        "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Non-zero status code returned while running MatMul "
        "node. Name:'__kneeboard_local_1__/node_MatMul_305' Status Message: dimension mismatch"
    )
    assert failing_layer(message, pairs) == "b"
    assert failing_layer(message.replace("_local_1__", "_local_7__"), pairs) is None
    assert failing_layer("out of memory", pairs) is None


@pytest.mark.slow
def test_minilm_third_party_int8_keeps_local_values(tmp_path: Path) -> None:
    """all-MiniLM-L6-v2 fp32 vs a third party's int8 export: structural matching pairs some reshapes and
    transposes whose tensors differ in shape. Before, their golden values were fed into the local
    sub-graphs, onnxruntime refused the batch, and none of the 84 comparable layers got a local value."""
    feeds = tokenize(["A man is playing a guitar.", "The cat sleeps on the sofa today.", "Stocks fell."])
    profile = profile_layers(minilm_fp32_onnx(tmp_path), "onnx", minilm_int8_onnx(), "onnx", [feeds])
    assert len(profile.layers) > 50
    without = [layer.name for layer in profile.layers if layer.local is None]
    assert without == [], [(layer.name, layer.local_note) for layer in profile.layers if layer.local is None]
    left_out = [note for note in profile.notes if "left out: shapes differ" in note]
    assert left_out, "the mismatched pairs this test is about are gone; find another model pair"
    # The first layer reads only the model's inputs, so its local value is the accumulated one exactly.
    first = profile.layers[0]
    assert first.local is not None
    assert first.local.sqnr_db == first.accumulated.sqnr_db or (
        math.isinf(first.local.sqnr_db) and math.isinf(first.accumulated.sqnr_db)
    )
