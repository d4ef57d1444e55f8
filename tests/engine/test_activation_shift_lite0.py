"""Activation-shift diagnostics on a real 224-px network: EfficientNet-Lite0 fp32 vs its int8 QDQ version
(built as tests/engine/test_layer_profile_lite0.py builds it) over a few sample photos. Every layer's
ranges, histograms, clip rates and dead units equal numpy on activations captured independently, and its
ReLU6 layers (Clip 0..6, dropped by onnxruntime's quantizer, which leaves the clamp to the quantizer) do not
count their own clamp as clipping."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.test_activation_shift import check_against_numpy
from tests.support.pretrained_lite0 import efficientnet_lite0
from tests.support.sample_images import sample_images
from worker.demo.models import export_onnx, quantize_onnx_int8

pytestmark = pytest.mark.slow


def test_lite0_shift_matches_numpy_and_relu6_is_not_clipping(tmp_path: Path) -> None:
    images = sample_images().images
    golden = export_onnx(efficientnet_lite0(), images[:2], tmp_path / "lite0.onnx")
    int8 = quantize_onnx_int8(golden, tmp_path / "lite0_int8.onnx", images, reduce_range=True)
    x = images[::4][:3]
    profile = check_against_numpy(golden, int8, x, min_clipping=20, dead_layers=None)
    relu6 = {layer.name: layer.shift for layer in profile.layers if layer.op_type == "Clip"}
    assert len(relu6) >= 10
    for name, shift in relu6.items():
        assert shift is not None and shift.clip_rate is not None, name
        if shift.quantizer_max is not None and shift.quantizer_max >= 6.0:
            assert shift.clip_rate == 0.0, (name, shift)  # nothing above 6 + half a step survives the Clip
    assert not [c for c in profile.likely_causes if c.kind == "clipping" and c.layer in relu6]
