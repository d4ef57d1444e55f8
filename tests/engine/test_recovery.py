"""Training-free accuracy recovery on the digits CNN trained in the test, 4-bit per-channel weights:
equalization keeps the float function, bias correction's shifts equal the mean output errors computed
again in numpy, AdaRound halves the held-out KL and stays within one step of nearest, and the exported
recovered model reproduces the stored figures in onnxruntime (KL recomputed with scipy)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from scipy.special import log_softmax, rel_entr, softmax

from worker.demo.models import DigitsCNN, DigitsSplit
from worker.engine.compression import MagnitudePrune, WeightQuant, as_compressible, open_compressible
from worker.engine.compression.ops import fake_quant_weight
from worker.engine.recovery import (
    MethodSpec,
    RecoveryError,
    RecoveryOutcome,
    correct_biases,
    equalize,
    export_recovered,
    recover,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

W4 = WeightQuant(4, per_channel=True)
PLAN = dict.fromkeys(("conv1", "conv2", "fc"), W4)
ORDER = ["conv1", "conv2", "fc"]
CALIBRATION = 512


def _calib(split: DigitsSplit) -> dict[str, np.ndarray]:
    return {"x": split.x_train[:CALIBRATION]}


def _held(split: DigitsSplit) -> dict[str, np.ndarray]:
    return {"x": split.x_test}


# ------------------------------------------------------------------------- numpy reference of the CNN


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int, pad: int = 1) -> np.ndarray:
    """Direct 2-d cross-correlation in float64 (im2col), as nn.Conv2d computes it."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    cols = np.empty((n, c, k, k, oh, ow))
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
    return (
        np.einsum("nckloq,dckl->ndoq", cols, w.astype(np.float64)) + b.astype(np.float64)[None, :, None, None]
    )


def _q4(w: np.ndarray) -> np.ndarray:
    """Symmetric per-channel 4-bit fake quantization written out: Δ = max|w|/7, round half to even."""
    flat = w.reshape(w.shape[0], -1).astype(np.float64)
    step = np.abs(flat).max(axis=1, keepdims=True) / 7
    return (np.clip(np.round(flat / step), -7, 7) * step).reshape(w.shape)


def _layer_outputs(params: dict[str, np.ndarray], x: np.ndarray, quantized: bool) -> dict[str, np.ndarray]:
    """conv1, conv2 and fc outputs (before the ReLUs) of the CNN, weights 4-bit quantized or not."""
    q = _q4 if quantized else (lambda w: w.astype(np.float64))
    a1 = _conv(x, q(params["conv1.weight"]), params["conv1.bias"], 1)
    a2 = _conv(np.maximum(a1, 0), q(params["conv2.weight"]), params["conv2.bias"], 2)
    flat = np.maximum(a2, 0).reshape(len(x), -1)
    a3 = flat @ q(params["fc.weight"]).T + params["fc.bias"]
    return {"conv1": a1, "conv2": a2, "fc": a3}


def _params(module: torch.nn.Module) -> dict[str, np.ndarray]:
    return {name: p.detach().numpy().copy() for name, p in module.named_parameters()}


def _channel_mean(a: np.ndarray) -> np.ndarray:
    return a.mean(axis=(0, 2, 3)) if a.ndim == 4 else a.mean(axis=0)


# --------------------------------------------------------------------------------------------- tests


def test_equalization_keeps_the_float_function_and_equalizes_ranges(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit
) -> None:
    module = copy.deepcopy(digits_cnn).eval()
    result = equalize(module)
    assert [(p.first, p.second, p.flattened) for p in result.pairs] == [
        ("conv1", "conv2", False),
        ("conv2", "fc", True),
    ]
    x = torch.from_numpy(digits_split.x_test)
    with torch.no_grad():
        before, after = digits_cnn(x).numpy(), module(x).numpy()
    assert np.abs(after - before).max() <= 1e-5 * np.abs(before).max()
    # every channel's range is now the same in both layers of the pair (numpy on the new weights)
    p = _params(module)
    r1 = np.abs(p["conv2.weight"]).reshape(16, -1).max(axis=1)
    r2 = np.abs(p["fc.weight"].reshape(10, 16, 16)).max(axis=(0, 2))
    np.testing.assert_allclose(r1, r2, rtol=1e-4)
    assert any(abs(s - 1) > 0.05 for scales in result.scales.values() for s in scales)  # it did move


def test_bias_correction_shifts_equal_the_mean_errors_in_numpy(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit
) -> None:
    module = copy.deepcopy(digits_cnn).eval()
    original = _params(module)
    calib = _calib(digits_split)
    result = correct_biases(module, ["x"], PLAN, ORDER, calib, batch_size=64)
    corrected = _params(module)
    x = calib["x"]
    golden = _layer_outputs(original, x, quantized=False)
    for index, name in enumerate(ORDER):
        # the layers before `name` carry their corrected biases, `name` and later ones their original ones
        params = dict(original)
        for earlier in ORDER[:index]:
            params[f"{earlier}.bias"] = corrected[f"{earlier}.bias"]
        error = _channel_mean(_layer_outputs(params, x, quantized=True)[name]) - _channel_mean(golden[name])
        np.testing.assert_allclose(result.shifts[name], -error, rtol=2e-3, atol=1e-6)
        np.testing.assert_allclose(
            corrected[f"{name}.bias"] - original[f"{name}.bias"], -error, rtol=2e-3, atol=1e-6
        )
    assert max(abs(s) for s in result.shifts["fc"]) > 1e-3  # the 4-bit error has a real mean to correct


@pytest.fixture(scope="module")
def adarounded(digits_cnn: DigitsCNN, digits_split: DigitsSplit) -> RecoveryOutcome:
    golden = as_compressible(digits_cnn, input_names=["x"])
    return recover(
        golden, W4, _calib(digits_split), _held(digits_split), digits_split.y_test, [MethodSpec("adaround")]
    )


def test_adaround_halves_the_held_out_kl_of_round_to_nearest(adarounded: RecoveryOutcome) -> None:
    before, after = adarounded.steps[0].fidelity, adarounded.steps[-1].fidelity
    assert [s.method for s in adarounded.steps] == ["before", "adaround"]
    assert before["kl_mean"] > 1e-4
    assert after["kl_mean"] <= 0.5 * before["kl_mean"]
    for layer in adarounded.steps[-1].details["layers"]:
        assert layer["loss_adaround"] < layer["loss_nearest"]
        assert 0 < layer["flipped"] < layer["total"]


def test_adaround_rounds_within_one_step_and_is_a_fixed_point(
    adarounded: RecoveryOutcome, digits_cnn: DigitsCNN
) -> None:
    assert isinstance(adarounded.module, torch.nn.Module)
    assert_on_grid_within_one_step(_params(digits_cnn), _params(adarounded.module))


def assert_on_grid_within_one_step(original: dict[str, np.ndarray], learned: dict[str, np.ndarray]) -> None:
    """Each learned 4-bit weight is on the plan's grid, floor or ceil of the original (within one step), a
    fixed point of the quantizer (the recovered model is its own export), and the biases are untouched."""
    for name in ORDER:
        w, w_hat = original[f"{name}.weight"], learned[f"{name}.weight"]
        flat, flat_hat = (
            w.reshape(len(w), -1).astype(np.float64),
            w_hat.reshape(len(w), -1).astype(np.float64),
        )
        step = np.abs(flat).max(axis=1, keepdims=True) / 7
        q = flat_hat / step
        np.testing.assert_allclose(q, np.round(q), atol=1e-4)  # on the grid
        assert np.all(np.abs(np.round(q) - flat / step) < 1 + 1e-4)  # floor or ceil: within one step
        assert np.abs(np.round(q)).max() <= 7
        # the plan's quantizer leaves the learned weights as they are (the recovered model is its own export)
        requant = fake_quant_weight(torch.from_numpy(w_hat), 4, True, True).numpy()
        np.testing.assert_allclose(requant, w_hat, rtol=0, atol=1e-6 * np.abs(w_hat).max())
        np.testing.assert_array_equal(learned[f"{name}.bias"], original[f"{name}.bias"])


def test_bias_correction_lowers_the_held_out_kl(digits_cnn: DigitsCNN, digits_split: DigitsSplit) -> None:
    golden = as_compressible(digits_cnn, input_names=["x"])
    outcome = recover(
        golden,
        W4,
        _calib(digits_split),
        _held(digits_split),
        digits_split.y_test,
        [MethodSpec("bias_correction")],
    )
    assert outcome.steps[-1].fidelity["kl_mean"] < outcome.steps[0].fidelity["kl_mean"]


def test_the_exported_recovered_model_reproduces_the_stored_figures(
    adarounded: RecoveryOutcome, digits_cnn: DigitsCNN, digits_split: DigitsSplit, tmp_path: Path
) -> None:
    golden = as_compressible(digits_cnn, input_names=["x"])
    path, manifest = export_recovered(
        golden, adarounded, tmp_path, _calib(digits_split), _held(digits_split), digits_split.y_test
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: digits_split.x_test})[0].astype(np.float64)
    with torch.no_grad():
        ref = digits_cnn(torch.from_numpy(digits_split.x_test)).numpy().astype(np.float64)
    kl = rel_entr(softmax(ref, axis=1), softmax(out, axis=1)).sum(axis=1).mean()
    np.testing.assert_allclose(kl, adarounded.summary()["after"]["kl_mean"], rtol=1e-3)
    np.testing.assert_allclose(kl, manifest["metrics"]["measured"]["kl_mean"], rtol=1e-6)
    accuracy = float((out.argmax(axis=1) == digits_split.y_test).mean())
    assert accuracy == pytest.approx(manifest["metrics"]["measured"]["accuracy_compressed"])
    # 4-bit weights have a real runtime form: integer initializers + DequantizeLinear, exact with the simulation
    assert manifest["kind"] == "real-int8-weights" and manifest["matches_simulation"]
    assert any(node.op_type == "DequantizeLinear" for node in onnx.load(str(path)).graph.node)
    assert np.isfinite(log_softmax(out, axis=1)).all()


def test_bad_requests_are_refused(digits_cnn: DigitsCNN, digits_split: DigitsSplit) -> None:
    golden = as_compressible(digits_cnn, input_names=["x"])
    calib, held = _calib(digits_split), _held(digits_split)
    with pytest.raises(RecoveryError, match="unknown recovery method"):
        MethodSpec("distillation")
    with pytest.raises(RecoveryError, match="no parameter"):
        MethodSpec("bias_correction", {"iterations": 3})
    with pytest.raises(RecoveryError, match="out of range"):
        MethodSpec("adaround", {"iterations": 0})
    with pytest.raises(RecoveryError, match="must be an integer"):
        MethodSpec("adaround", {"iterations": 1.5})
    with pytest.raises(RecoveryError, match="equalization must come first"):
        recover(golden, W4, calib, held, None, [MethodSpec("adaround"), MethodSpec("equalization")])
    with pytest.raises(RecoveryError, match="AdaRound needs"):
        recover(golden, MagnitudePrune(0.5), calib, held, None, [MethodSpec("adaround")])
    with pytest.raises(RecoveryError, match="compresses nothing"):
        recover(golden, None, calib, held, None, [MethodSpec("bias_correction")])
    script = as_compressible(torch.jit.script(digits_cnn))
    with pytest.raises(RecoveryError, match="TorchScript"):
        recover(script, W4, calib, held, None, [MethodSpec("bias_correction")])


def test_the_full_chain_on_the_torch_export_program(
    cnn_files: dict[str, Path], digits_split: DigitsSplit, tmp_path: Path
) -> None:
    """The .pt2 file as the worker loads it (torch.export.unflatten): equalization finds both pairs in its
    graph, AdaRound then bias correction (measured against the equalized float model) each lower the KL
    further, and the export reproduces the last figures in onnxruntime."""
    golden = open_compressible(cnn_files["torch_export"], "torch_export")
    name = golden.inputs[0].name
    calib, held = {name: digits_split.x_train[:CALIBRATION]}, {name: digits_split.x_test}
    methods = [MethodSpec("equalization"), MethodSpec("adaround"), MethodSpec("bias_correction")]
    outcome = recover(golden, W4, calib, held, digits_split.y_test, methods)
    kl = [step.fidelity["kl_mean"] for step in outcome.steps]
    assert len(outcome.steps[1].details["pairs"]) == 2
    assert kl[2] < kl[0] and kl[3] < kl[2]
    _, manifest = export_recovered(golden, outcome, tmp_path, calib, held, digits_split.y_test)
    np.testing.assert_allclose(manifest["metrics"]["measured"]["kl_mean"], kl[3], rtol=1e-4)


def test_the_api_parameters_of_adaround_are_the_engines() -> None:
    """backend/recovery_contracts.AdaRoundIn and the engine's AdaRoundParams: same fields, same defaults."""
    from dataclasses import asdict

    from backend.recovery_contracts import AdaRoundIn
    from worker.engine.recovery import AdaRoundParams

    api = AdaRoundIn().model_dump(exclude={"name"})
    assert api == asdict(AdaRoundParams())
    MethodSpec("adaround", api)  # the API's values pass the engine's checks
