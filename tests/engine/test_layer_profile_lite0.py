"""The layer profile on a real 224-px network: EfficientNet-Lite0 fp32 vs its int8 QDQ version (built as
tests/engine/test_pretrained_fidelity.py builds it), over a few of the sample photos. Each quantized
tensor's own-quantizer error (qdq_err) and accumulated error are checked against onnxruntime's
qdq_loss_debug, and the profile's batches, sized from the memory budget, do not change the numbers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.support.pretrained_lite0 import efficientnet_lite0
from tests.support.sample_images import sample_images
from worker.demo.models import export_onnx, quantize_onnx_int8
from worker.engine.layer_profile import profile_layers

pytestmark = pytest.mark.slow

N = 4


@dataclass(frozen=True)
class Lite0:
    golden: Path
    int8: Path
    x: np.ndarray


@pytest.fixture(scope="module")
def lite0(tmp_path_factory: pytest.TempPathFactory) -> Lite0:
    folder = tmp_path_factory.mktemp("lite0_profile")
    images = sample_images().images
    golden = export_onnx(efficientnet_lite0(), images[:2], folder / "lite0.onnx")
    int8 = quantize_onnx_int8(golden, folder / "lite0_int8.onnx", images, reduce_range=True)
    return Lite0(golden, int8, images[::4][:N])  # both photos, different crops


def qdq_loss_debug_errors(lite0: Lite0, tmp: Path) -> tuple[dict, dict]:
    from onnxruntime.quantization import qdq_loss_debug as qdq

    class Reader:
        def __init__(self) -> None:
            self._it: Iterator[dict[str, np.ndarray]] = iter([{"input": lite0.x}])

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

        def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
            return self._it

    qdq.modify_model_output_intermediate_tensors(str(lite0.golden), str(tmp / "float_aug.onnx"))
    qdq.modify_model_output_intermediate_tensors(str(lite0.int8), str(tmp / "qdq_aug.onnx"))
    float_acts = qdq.collect_activations(str(tmp / "float_aug.onnx"), Reader())
    qdq_acts = qdq.collect_activations(str(tmp / "qdq_aug.onnx"), Reader())
    matching = qdq.create_activation_matching(qdq_acts, float_acts)
    return qdq.compute_activation_error(matching), matching


def test_qdq_err_and_accumulated_match_qdq_loss_debug_at_every_quantized_tensor(
    lite0: Lite0, tmp_path: Path
) -> None:
    errors, matching = qdq_loss_debug_errors(lite0, tmp_path)
    profile = profile_layers(lite0.golden, "onnx", lite0.int8, "onnx", [{"input": lite0.x}])
    layers = {layer.name: layer for layer in profile.layers}
    assert profile.n_samples == N
    compared = 0
    for name, err in errors.items():
        layer = layers[name]
        assert layer.qdq_err is not None, name
        pre, post = (np.concatenate(matching[name][k]) for k in ("pre_qdq", "post_qdq"))
        if np.array_equal(pre, post):  # ORT clamps an exactly zero error at float eps
            assert layer.qdq_err.sqnr_db == float("inf"), name
        else:
            assert layer.qdq_err.sqnr_db == pytest.approx(err["qdq_err"], abs=1e-3), name
            compared += 1
        golden = np.concatenate(matching[name]["float"])
        if np.array_equal(golden, post):  # e.g. the input: (pixel - 127) / 128 is exact at scale 1/128
            assert layer.accumulated.sqnr_db == float("inf"), name
        else:
            assert layer.accumulated.sqnr_db == pytest.approx(err["xmodel_err"], abs=1e-3), name
    assert compared >= 40  # EfficientNet-Lite0 quantizes some 60 activations


def test_memory_budget_sets_the_batches_not_the_numbers(lite0: Lite0) -> None:
    feeds = [{"input": lite0.x[:2]}, {"input": lite0.x[2:]}]
    small = profile_layers(lite0.golden, "onnx", lite0.int8, "onnx", feeds, memory_budget_mb=64)
    large = profile_layers(lite0.golden, "onnx", lite0.int8, "onnx", feeds, memory_budget_mb=4096)
    # about 100 MB of captured tensors per 224-px sample: one sample per batch under 64 MB, all under 4 GB
    assert small.profile_batch_size == 1 and large.profile_batch_size > N
    assert [layer.name for layer in small.layers] == [layer.name for layer in large.layers]
    assert sum(layer.qdq_err is not None for layer in small.layers) >= 40
    for a, b in zip(small.layers, large.layers, strict=True):
        for sa, sb in ((a.accumulated, b.accumulated), (a.local, b.local), (a.qdq_err, b.qdq_err)):
            assert (sa is None) == (sb is None), a.name
            if sa is None or sb is None:
                continue
            # not 1e-9: onnxruntime's Gemm takes another kernel for one row than for several, which moves
            # the logits' SQNR by ~3e-8 relative (the float32 arithmetic, not the sums)
            assert sa.sqnr_db == pytest.approx(sb.sqnr_db, rel=1e-6), a.name
            assert sa.cosine_mean == pytest.approx(sb.cosine_mean, rel=1e-9), a.name
