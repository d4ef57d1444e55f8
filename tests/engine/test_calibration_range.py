"""Calibration vs evaluation range in the per-layer profile, on the real digits CNN (fp32 against its int8
QDQ quantization, and its torch.export program against itself): every layer's golden range on a
calibration set and the share of evaluation values outside it are recomputed with numpy from activations
the test captures itself (onnxruntime with the tensors added as graph outputs; forward hooks on the
trained torch module) and must agree exactly; a calibration set the model cannot run leaves a note and
the rest of the profile unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.engine.test_activation_shift import capture
from worker.demo.models import DigitsCNN, DigitsSplit, export_onnx, export_torch_program, quantize_onnx_int8
from worker.engine.layer_profile import LayerProfile, profile_layers
from worker.engine.layer_profile.calibration import first_samples
from worker.engine.layer_profile.causes import calibration_threshold


@dataclass(frozen=True)
class Models:
    golden: Path
    int8: Path
    program: Path


@pytest.fixture(scope="module")
def models(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory
) -> Models:
    folder = tmp_path_factory.mktemp("calibration_range")
    golden = export_onnx(digits_cnn, digits_split.x_test[:2], folder / "golden.onnx")
    return Models(
        golden,
        quantize_onnx_int8(golden, folder / "int8.onnx", digits_split.x_train[:512]),
        export_torch_program(digits_cnn, digits_split.x_test[:2], folder / "golden.pt2"),
    )


def batches(x: np.ndarray, size: int) -> Iterator[dict[str, np.ndarray]]:
    """`x` streamed in batches of `size` (the profile re-cuts them into its own)."""
    for start in range(0, len(x), size):
        yield {"input": x[start : start + size]}


def expected_counts(calibration: np.ndarray, evaluation: np.ndarray) -> tuple[float, float, int, int]:
    """numpy: the calibration range and the evaluation values below / above it."""
    low, high = calibration.min(), calibration.max()
    return float(low), float(high), int((evaluation < low).sum()), int((evaluation > high).sum())


def check_layers(profile: LayerProfile, cal: dict[str, np.ndarray], ev: dict[str, np.ndarray]) -> int:
    """Every layer's calibration fields against numpy; returns how many layers have values outside."""
    outside = 0
    for layer in profile.layers:
        shift = layer.shift
        assert shift is not None
        low, high, below, above = expected_counts(cal[layer.name], ev[layer.name])
        assert (shift.calibration_min, shift.calibration_max) == (low, high), layer.name
        assert (shift.calibration_below, shift.calibration_above) == (below, above), layer.name
        assert shift.n_values == ev[layer.name].size
        assert shift.calibration_outside_rate == (below + above) / ev[layer.name].size, layer.name
        outside += below + above > 0
    return outside


@pytest.mark.parametrize(("scale", "limit", "layers_outside"), [(0.5, 10_000, 4), (1.0, 64, 1)])
def test_onnx_calibration_ranges_match_numpy(
    models: Models, digits_split: DigitsSplit, scale: float, limit: int, layers_outside: int
) -> None:
    """Calibration sets from the training digits: all of them scaled by 0.5 (unlike the evaluation set),
    and their first 64 as they are (like it, but few); streamed in batches of 50 that the profile re-cuts."""
    x = digits_split.x_test
    calibration = (digits_split.x_train * np.float32(scale)).astype(np.float32)
    profile = profile_layers(
        models.golden,
        "onnx",
        models.int8,
        "onnx",
        batches(x, 100),
        calibration_batches=batches(calibration, 50),
        calibration_samples=limit,
        memory_budget_mb=0.25,  # several calibration and evaluation batches
    )
    used = calibration[:limit]
    assert profile.calibration_samples == len(used)
    names = [layer.name for layer in profile.layers]
    assert len(names) >= 4
    outside = check_layers(profile, capture(models.golden, names, [used]), capture(models.golden, names, [x]))
    assert outside >= layers_outside, "the evaluation set goes beyond these calibration sets"
    causes = [c for c in profile.likely_causes if c.kind == "calibration_range"]
    threshold = calibration_threshold(len(used))
    rates = {layer.name: layer.shift.calibration_outside_rate for layer in profile.layers if layer.shift}
    expected = sorted(
        (n for n, r in rates.items() if r is not None and r >= threshold), key=lambda n: -rates[n]
    )
    assert [c.layer for c in causes] == expected[:3]
    for cause in causes:
        assert cause.value == rates[cause.layer] and cause.threshold == threshold
        assert f"{100 * cause.value:.1f} % of evaluation activations fall outside" in cause.message
        assert "calibrate on data like the evaluation set" in cause.message


def test_the_input_range_is_the_data_shift(models: Models, digits_split: DigitsSplit) -> None:
    """At the model input (a QDQ-quantized graph input) the calibration range is the calibration data's own
    [min, max]: with the digits halved, every evaluation pixel above half the calibration maximum is out."""
    x = digits_split.x_test
    calibration = digits_split.x_train * np.float32(0.5)
    profile = profile_layers(
        models.golden,
        "onnx",
        models.int8,
        "onnx",
        batches(x, 360),
        calibration_batches=batches(calibration, 360),
    )
    shift = next(layer.shift for layer in profile.layers if layer.name == "input")
    assert shift is not None and shift.calibration_max == float(calibration[:256].max())
    assert shift.calibration_outside_rate == float(np.mean(x > calibration[:256].max()))
    assert shift.calibration_outside_rate > 0.1


def torch_calls(model: DigitsCNN, x: np.ndarray) -> dict[str, np.ndarray]:
    """Outputs of every leaf-module call, named as the profile names torch layers (a module's k-th call
    is path#k), from forward hooks on the trained module."""
    seen: dict[str, np.ndarray] = {}
    calls: dict[str, int] = {}

    def hook(path: str, _module: torch.nn.Module, _args: object, output: torch.Tensor) -> None:
        calls[path] = calls.get(path, 0) + 1
        seen[path if calls[path] == 1 else f"{path}#{calls[path]}"] = output.detach().numpy().copy()

    handles = [
        module.register_forward_hook(lambda m, a, o, p=path: hook(p, m, a, o))
        for path, module in model.named_modules()
        if path and not list(module.children())
    ]
    try:
        with torch.inference_mode():
            model(torch.from_numpy(x))
    finally:
        for handle in handles:
            handle.remove()
    return seen


def test_torch_export_calibration_ranges_match_hooks(
    models: Models, digits_cnn: DigitsCNN, digits_split: DigitsSplit
) -> None:
    x = digits_split.x_test[:200]
    calibration = digits_split.x_train[:100] * np.float32(0.5)
    profile = profile_layers(
        models.program,
        "torch_export",
        models.program,
        "torch_export",
        batches(x, 64),
        calibration_batches=batches(calibration, 64),
        memory_budget_mb=0.25,
    )
    assert profile.calibration_samples == 100
    assert {layer.name for layer in profile.layers} == {"conv1", "relu", "conv2", "relu#2", "fc"}
    cal, ev = torch_calls(digits_cnn, calibration), torch_calls(digits_cnn, x)
    # torch.export runs the same kernels batch by batch; the hooks run the whole set at once, so values
    # may differ in the last bit: compare the ranges closely and the counts within a few values.
    for layer in profile.layers:
        shift = layer.shift
        assert shift is not None and shift.calibration_min is not None and shift.calibration_max is not None
        low, high, below, above = expected_counts(cal[layer.name], ev[layer.name])
        assert shift.calibration_min == pytest.approx(low, rel=1e-5, abs=1e-6)
        assert shift.calibration_max == pytest.approx(high, rel=1e-5, abs=1e-6)
        assert abs(shift.calibration_below - below) <= 2 and abs(shift.calibration_above - above) <= 2
        assert shift.calibration_outside_rate == pytest.approx(
            (below + above) / ev[layer.name].size, abs=1e-4
        )
    assert all(layer.shift and layer.shift.calibration_outside_rate for layer in profile.layers)


def test_a_calibration_set_that_does_not_fit_leaves_a_note(models: Models, digits_split: DigitsSplit) -> None:
    x = digits_split.x_test[:120]
    plain = profile_layers(models.golden, "onnx", models.int8, "onnx", batches(x, 120))
    flat = np.zeros((20, 64), np.float32)
    profile = profile_layers(
        models.golden, "onnx", models.int8, "onnx", batches(x, 120), calibration_batches=batches(flat, 20)
    )
    assert profile.calibration_samples is None
    assert any(
        "calibration set could not be run" in note and "Invalid rank" in note for note in profile.notes
    )
    assert all(layer.shift and layer.shift.calibration_outside_rate is None for layer in profile.layers)
    assert all(c.kind != "calibration_range" for c in profile.likely_causes)
    # The rest of the profile is the profile made without a calibration set.
    assert [layer.to_dict() for layer in profile.layers] == [layer.to_dict() for layer in plain.layers]
    assert profile.notes[:-1] == plain.notes
    empty = profile_layers(
        models.golden, "onnx", models.int8, "onnx", batches(x, 120), calibration_batches=iter([])
    )
    assert any("calibration set has no samples" in note for note in empty.notes)


def test_first_samples_cuts_the_stream() -> None:
    stream = [{"a": np.arange(5)}, {"a": np.arange(5, 9)}, {"a": np.arange(9, 20)}]
    assert [b["a"].tolist() for b in first_samples(stream, 7)] == [[0, 1, 2, 3, 4], [5, 6]]
    assert [b["a"].tolist() for b in first_samples(stream, 5)] == [[0, 1, 2, 3, 4]]
