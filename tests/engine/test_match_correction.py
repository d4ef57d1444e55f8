"""A corrected matching, as the dashboard's match correction writes it into `layer_name_map` (re-pair a golden
layer with another compressed layer, unmatch a pair, keep the rest), pairs the profile's layers exactly as the
map says, and the re-paired row's numbers are those of the tensors the map names (computed here with
onnxruntime and numpy, which the profile's code never calls)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.test_layer_matching import activations
from tests.support.digits_layer_profile import batches
from worker.demo.models import DemoBundle, DigitsSplit
from worker.engine.layer_profile import profile_layers

DQ = "_DequantizeLinear_Output"


def test_corrected_name_map_pairs_layers_as_written(
    digits_bundle: DemoBundle, digits_split: DigitsSplit
) -> None:
    golden, int8 = digits_bundle.golden_onnx, digits_bundle.int8_onnx
    x = digits_split.x_test[:96]
    auto = profile_layers(golden, "onnx", int8, "onnx", batches(x, 32))
    before = {layer.name: (layer.compressed_name, layer.match_method) for layer in auto.layers}
    # The demo pair matches by name: the golden conv1 pre-activation tensor has no compressed counterpart.
    assert before["relu"] == ("relu" + DQ, "name") and before["relu_1"] == ("relu_1" + DQ, "name")
    assert "conv2d" in auto.unmatched_golden and "conv2d" not in before

    # The correction: conv1's pre-activation gets the compressed relu output (same shape), relu is unmatched
    # (the map's "" value), relu_1 is named by its canonical id (an alias) and kept on its own tensor.
    name_map = {"conv2d": "relu" + DQ, "relu": "", "conv2": "relu_1" + DQ}
    corrected = profile_layers(golden, "onnx", int8, "onnx", batches(x, 32), name_map=name_map)
    after = {layer.name: (layer.compressed_name, layer.match_method) for layer in corrected.layers}
    assert after["conv2d"] == ("relu" + DQ, "name_map")
    assert after["relu_1"] == ("relu_1" + DQ, "name_map")
    assert "relu" not in after and "relu" in corrected.unmatched_golden
    # Layers the map does not name keep their automatic pairing.
    untouched = set(before) - {"relu", "relu_1"}
    assert untouched and all(after[name] == before[name] for name in untouched)
    assert len({compressed for compressed, _ in after.values()}) == len(after)  # no compressed layer twice

    # The re-paired row compares the golden pre-activation with the compressed post-ReLU tensor.
    g = activations(golden, {"input": x}, ["conv2d"])["conv2d"].astype(np.float64)
    c = activations(int8, {"input": x}, ["relu" + DQ])["relu" + DQ].astype(np.float64)
    expected_sqnr = 10 * np.log10(np.sum(g**2) / np.sum((g - c) ** 2))
    gs, cs = g.reshape(len(x), -1), c.reshape(len(x), -1)
    cosine = np.sum(gs * cs, axis=1) / (np.linalg.norm(gs, axis=1) * np.linalg.norm(cs, axis=1))
    row = next(layer for layer in corrected.layers if layer.name == "conv2d")
    assert row.accumulated.sqnr_db == pytest.approx(expected_sqnr, abs=1e-3)
    assert row.accumulated.cosine_mean == pytest.approx(float(cosine.mean()), abs=1e-5)
    # ... which is not the pairing the automatic matching would have scored (the ReLU cuts the negatives).
    auto_relu = next(layer for layer in auto.layers if layer.name == "relu")
    assert abs(row.accumulated.sqnr_db - auto_relu.accumulated.sqnr_db) > 3
