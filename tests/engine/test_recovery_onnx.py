"""Training-free recovery of an ONNX golden model (issue 14): the digits CNN trained in the test, exported
to ONNX, 4-bit per-channel weights compressed by the ONNX backend. Bias correction's shifts equal the mean
output errors written out in numpy; AdaRound (each layer run as the equivalent torch op) halves the
held-out KL, rounds within one step of nearest and leaves fixed points of the plan's quantizer; the exported
file reproduces the stored figures in onnxruntime (KL recomputed with scipy); the torch-only methods are
refused with the reason; equalization finds the same pairs and scales as the torch path on the same CNN and
keeps the float function in onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import numpy_helper
from scipy.special import rel_entr, softmax

from tests.engine.test_recovery import (
    ORDER,
    PLAN,
    W4,
    _channel_mean,
    _layer_outputs,
    _params,
    assert_on_grid_within_one_step,
)
from worker.demo.models import DigitsCNN, DigitsSplit, export_onnx
from worker.engine.compression import open_compressible
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.recovery import MethodSpec, RecoveryError, RecoveryOutcome, export_recovered, recover

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def cnn_onnx(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return export_onnx(
        digits_cnn, digits_split.x_test[:2], tmp_path_factory.mktemp("onnx_recovery") / "cnn.onnx"
    )


def _golden(path: Path) -> OnnxCompressible:
    handle = open_compressible(path, "onnx", intra_op_threads=1)
    assert isinstance(handle, OnnxCompressible)
    assert [layer.name for layer in handle.layers()] == ORDER  # inspection's ids: conv1, conv2, fc
    return handle


def _calib(split: DigitsSplit) -> dict[str, np.ndarray]:
    return {"input": split.x_train[:512]}


def _held(split: DigitsSplit) -> dict[str, np.ndarray]:
    return {"input": split.x_test}


def _initializers(model: onnx.ModelProto, handle: OnnxCompressible) -> dict[str, np.ndarray]:
    """The recovered model's conv1/conv2/fc weights and biases, by their torch names."""
    values = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    out = {}
    for layer in handle.layers():
        for spec in [*layer.weights, *layer.biases]:
            value, _ = handle.tensor_value(spec.key)
            suffix = "weight" if spec in layer.weights else "bias"
            out[f"{layer.name}.{suffix}"] = values.get(f"{value}__kneeboard", values[value])
    return out


@pytest.fixture(scope="module")
def corrected(cnn_onnx: Path, digits_split: DigitsSplit) -> RecoveryOutcome:
    return recover(
        _golden(cnn_onnx),
        W4,
        _calib(digits_split),
        _held(digits_split),
        digits_split.y_test,
        [MethodSpec("bias_correction")],
    )


@pytest.fixture(scope="module")
def adarounded(cnn_onnx: Path, digits_split: DigitsSplit) -> RecoveryOutcome:
    return recover(
        _golden(cnn_onnx),
        W4,
        _calib(digits_split),
        _held(digits_split),
        digits_split.y_test,
        [MethodSpec("adaround")],
    )


def test_bias_correction_shifts_equal_the_mean_errors_in_numpy(
    corrected: RecoveryOutcome, cnn_onnx: Path, digits_cnn: DigitsCNN, digits_split: DigitsSplit
) -> None:
    assert isinstance(corrected.module, onnx.ModelProto)
    original = _params(digits_cnn)
    after = _initializers(corrected.module, _golden(cnn_onnx))
    shifts = corrected.steps[-1].details["shifts"]
    x = _calib(digits_split)["input"]
    golden = _layer_outputs(original, x, quantized=False)
    for index, name in enumerate(ORDER):
        params = dict(original)
        for earlier in ORDER[:index]:
            params[f"{earlier}.bias"] = after[f"{earlier}.bias"]
        error = _channel_mean(_layer_outputs(params, x, quantized=True)[name]) - _channel_mean(golden[name])
        np.testing.assert_allclose(shifts[name], -error, rtol=2e-3, atol=1e-6)
        np.testing.assert_allclose(
            after[f"{name}.bias"] - original[f"{name}.bias"], -error, rtol=2e-3, atol=1e-6
        )
    assert corrected.steps[-1].fidelity["kl_mean"] < corrected.steps[0].fidelity["kl_mean"]


def test_adaround_halves_the_held_out_kl_within_one_step_on_its_grid(
    adarounded: RecoveryOutcome, cnn_onnx: Path, digits_cnn: DigitsCNN
) -> None:
    before, after = adarounded.steps[0].fidelity, adarounded.steps[-1].fidelity
    assert before["kl_mean"] > 1e-4 and after["kl_mean"] <= 0.5 * before["kl_mean"]
    for layer in adarounded.steps[-1].details["layers"]:
        assert layer["loss_adaround"] < layer["loss_nearest"] and 0 < layer["flipped"] < layer["total"]
    assert isinstance(adarounded.module, onnx.ModelProto)
    assert_on_grid_within_one_step(_params(digits_cnn), _initializers(adarounded.module, _golden(cnn_onnx)))


def test_the_exported_recovered_onnx_model_reproduces_the_stored_figures(
    adarounded: RecoveryOutcome, cnn_onnx: Path, digits_split: DigitsSplit, tmp_path: Path
) -> None:
    path, manifest = export_recovered(
        _golden(cnn_onnx),
        adarounded,
        tmp_path,
        _calib(digits_split),
        _held(digits_split),
        digits_split.y_test,
    )
    x = digits_split.x_test
    out = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    ref = ort.InferenceSession(str(cnn_onnx), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    p, q = softmax(ref.astype(np.float64), axis=1), softmax(out.astype(np.float64), axis=1)
    kl = rel_entr(p, q).sum(axis=1).mean()
    np.testing.assert_allclose(kl, adarounded.summary()["after"]["kl_mean"], rtol=1e-3)
    np.testing.assert_allclose(kl, manifest["metrics"]["measured"]["kl_mean"], rtol=1e-6)
    assert manifest["kind"] == "real-int8-weights" and manifest["matches_simulation"]


def test_torch_only_methods_are_refused_on_onnx(cnn_onnx: Path, digits_split: DigitsSplit) -> None:
    for method in ("distill", "qat"):
        with pytest.raises(RecoveryError, match=r"torch golden model \(\.pt2\)"):
            recover(
                _golden(cnn_onnx), PLAN, _calib(digits_split), _held(digits_split), None, [MethodSpec(method)]
            )


def test_a_conv_with_asymmetric_pads_runs_as_its_torch_op(tmp_path: Path) -> None:
    """TensorFlow-style "same" convolutions (EfficientNet-Lite's stride-2 layers) pad one side more: the torch
    op pads the input first with F.pad, and equals onnxruntime's Conv."""
    from onnx import TensorProto, helper

    from worker.engine.recovery.onnx_model import layer_ops

    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", strides=[2, 2], pads=[0, 0, 1, 1])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, 9, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    path = tmp_path / "pads.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    handle = open_compressible(path, "onnx")
    assert isinstance(handle, OnnxCompressible)
    [op] = layer_ops(handle, [layer.name for layer in handle.layers()])
    assert op.pre_pad == (0, 1, 0, 1) and op.output == "y" and op.bias_key is not None
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with torch.no_grad():
        got = (
            op.module(torch.nn.functional.pad(torch.from_numpy(x), op.pre_pad)).numpy()
            + b[None, :, None, None]
        )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_equalization_matches_the_torch_path_and_keeps_the_function(
    cnn_onnx: Path, digits_cnn: DigitsCNN, digits_split: DigitsSplit
) -> None:
    import copy

    from worker.engine.recovery import equalize
    from worker.engine.recovery.onnx_equalization import equalize_onnx
    from worker.engine.recovery.onnx_model import OnnxRecovery

    recovery = OnnxRecovery(_golden(cnn_onnx))
    result = equalize_onnx(recovery)
    reference = equalize(copy.deepcopy(digits_cnn).eval())
    assert (
        [(p.first, p.second, p.flattened) for p in result.pairs]
        == [(p.first, p.second, p.flattened) for p in reference.pairs]
        == [("conv1", "conv2", False), ("conv2", "fc", True)]
    )
    for key, scales in reference.scales.items():
        np.testing.assert_allclose(result.scales[key], scales, rtol=1e-6)
    x = digits_split.x_test
    golden = ort.InferenceSession(str(cnn_onnx), providers=["CPUExecutionProvider"]).run(None, {"input": x})[
        0
    ]
    model = recovery.model()
    out = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"input": x}
    )[0]
    np.testing.assert_allclose(out, golden, rtol=1e-4, atol=1e-4 * np.abs(golden).max())
    # equalized: conv1's output channel ranges equal conv2's input channel ranges
    params = _initializers(model, _golden(cnn_onnx))
    r1 = np.abs(params["conv1.weight"]).reshape(len(params["conv1.weight"]), -1).max(axis=1)
    r2 = np.abs(params["conv2.weight"]).transpose(1, 0, 2, 3).reshape(len(r1), -1).max(axis=1)
    assert np.abs(np.log(r1 / r2)).max() < 0.05
