"""SmoothQuant scale migration: the scales equal s_j = max|X_j|^α / max|W_j|^(1−α) computed again in numpy
from the recorded activations and weights, each fold (a scale node on the model input, a Linear through a
ReLU, a LayerNorm shared by two layers) is the one numpy predicts, the float function is unchanged, and on
a small model with an injected activation outlier channel the held-out KL of per-tensor 8-bit weights +
activations and of per-tensor 4-bit weights goes down; on the digits CNN's .pt2 program the chain
smoothquant → AdaRound → bias correction runs and its export reproduces the figures in onnxruntime."""

from __future__ import annotations

import copy
from dataclasses import asdict
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from scipy.special import rel_entr, softmax
from torch import nn

from worker.demo.models import DigitsSplit
from worker.engine.compression import WeightQuant, as_compressible, open_compressible
from worker.engine.compression.configs import ActivationQuant, Quantize
from worker.engine.recovery import (
    MethodSpec,
    RecoveryError,
    SmoothQuantParams,
    export_recovered,
    recover,
    smooth,
)
from worker.engine.recovery.smoothquant import SmoothedLinear

pytestmark = pytest.mark.usefixtures("one_torch_thread")

OUTLIER, FACTOR = 3, 50.0


class Net(nn.Module):
    """fc1 → ReLU → fc2 → LayerNorm → (head_a + head_b): fc1 reads the model input (a scale node), fc2 the
    ReLU of fc1 (fold into fc1), both heads the LayerNorm (one shared s, folded into it)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 32), nn.Linear(32, 32)
        self.ln = nn.LayerNorm(32)
        self.head_a, self.head_b = nn.Linear(32, 10), nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln(self.fc2(torch.relu(self.fc1(x))))
        return self.head_a(h) + self.head_b(h)


@pytest.fixture(scope="module")
def net() -> Net:
    """Random weights, then fc1's output channel OUTLIER ×50 and fc2's matching column ÷50: the same function,
    with one activation channel 50 times wider than the rest (the outliers SmoothQuant is for)."""
    torch.manual_seed(0)
    module = Net().eval()
    with torch.no_grad():
        module.ln.weight.uniform_(0.5, 1.5)
        module.ln.bias.uniform_(-0.2, 0.2)
        module.fc1.weight[OUTLIER] *= FACTOR
        module.fc1.bias[OUTLIER] *= FACTOR
        module.fc2.weight[:, OUTLIER] /= FACTOR
    return module


def _data(n: int, seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)}


def _p(module: nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().astype(np.float64) for k, v in module.state_dict().items()}


def _s(x: np.ndarray, *weights: np.ndarray, alpha: float) -> np.ndarray:
    a = np.abs(x.reshape(-1, x.shape[-1])).max(axis=0)
    w = np.max([np.abs(weight).max(axis=0) for weight in weights], axis=0)
    return a**alpha / w ** (1 - alpha)


@pytest.mark.parametrize("alpha", [0.5, 0.8])
def test_the_scales_and_folds_are_the_numpy_ones_and_the_float_model_is_kept(net: Net, alpha: float) -> None:
    module = copy.deepcopy(net)
    p = _p(net)
    x = _data(512, 0)["x"].astype(np.float64)
    # the inputs each layer sees, recorded in numpy
    x2 = np.maximum(x @ p["fc1.weight"].T + p["fc1.bias"], 0)
    z = x2 @ p["fc2.weight"].T + p["fc2.bias"]
    x3 = (z - z.mean(1, keepdims=True)) / np.sqrt(z.var(1, keepdims=True) + 1e-5) * p["ln.weight"] + p[
        "ln.bias"
    ]
    s1 = _s(x, p["fc1.weight"], alpha=alpha)
    s2 = _s(x2, p["fc2.weight"], alpha=alpha)
    s3 = _s(x3, p["head_a.weight"], p["head_b.weight"], alpha=alpha)

    result = smooth(
        module, ["fc1", "fc2", "head_a", "head_b"], {"x": x.astype(np.float32)}, SmoothQuantParams(alpha)
    )
    groups = {tuple(g.layers): g for g in result.groups}
    assert {k: (g.fold, g.folded_into, g.through_relu) for k, g in groups.items()} == {
        ("fc1",): ("scale node", None, False),
        ("fc2",): ("linear", "fc1", True),
        ("head_a", "head_b"): ("layernorm", "ln", False),
    }
    for key, s in ((("fc1",), s1), (("fc2",), s2), (("head_a", "head_b"), s3)):
        np.testing.assert_allclose(groups[key].scales, s, rtol=1e-5)
    assert groups[("fc2",)].outlier_ratio > 10  # the injected channel

    q = _p(module)
    assert isinstance(module.fc1, SmoothedLinear)
    np.testing.assert_allclose(q["fc1.smooth_inverse"], 1 / s1, rtol=1e-6)
    np.testing.assert_allclose(q["fc1.weight"], p["fc1.weight"] * s1 / s2[:, None], rtol=1e-5)
    np.testing.assert_allclose(q["fc1.bias"], p["fc1.bias"] / s2, rtol=1e-5)
    np.testing.assert_allclose(q["fc2.weight"], p["fc2.weight"] * s2, rtol=1e-5)
    np.testing.assert_allclose(q["ln.weight"], p["ln.weight"] / s3, rtol=1e-5)
    np.testing.assert_allclose(q["ln.bias"], p["ln.bias"] / s3, rtol=1e-5)
    for head in ("head_a", "head_b"):
        np.testing.assert_allclose(q[f"{head}.weight"], p[f"{head}.weight"] * s3, rtol=1e-5)
    # the outlier channel now has a range close to the others'
    after = np.abs(x2 / s2).max(axis=0)
    assert after.max() / np.median(after) < groups[("fc2",)].outlier_ratio / 4

    held = torch.from_numpy(_data(256, 1)["x"])
    with torch.no_grad():
        before, now = net(held).numpy(), module(held).numpy()
    assert np.abs(now - before).max() <= 1e-5 * np.abs(before).max()


@pytest.mark.parametrize(
    "config",
    [Quantize(WeightQuant(8, per_channel=False), ActivationQuant(8)), WeightQuant(4, per_channel=False)],
    ids=["w8a8-per-tensor", "w4-per-tensor"],
)
def test_smoothing_lowers_the_held_out_kl_with_an_outlier_channel(net: Net, config: object) -> None:
    golden = as_compressible(net, input_names=["x"])
    outcome = recover(golden, config, _data(512, 0), _data(256, 1), None, [MethodSpec("smoothquant")])
    kl = [step.fidelity["kl_mean"] for step in outcome.steps]
    assert kl[1] < kl[0] / 4, kl


def test_the_order_and_the_parameters_are_checked(net: Net) -> None:
    golden = as_compressible(net, input_names=["x"])
    with pytest.raises(RecoveryError, match="smoothquant must come first"):
        recover(
            golden,
            WeightQuant(4),
            _data(64, 0),
            _data(32, 1),
            None,
            [MethodSpec("bias_correction"), MethodSpec("smoothquant")],
        )
    with pytest.raises(RecoveryError, match="out of range"):
        MethodSpec("smoothquant", {"alpha": 1.5})
    with pytest.raises(RecoveryError, match="no parameter"):
        MethodSpec("smoothquant", {"beta": 0.5})


def test_the_chain_on_the_torch_export_program_exports_what_it_measured(
    cnn_files: dict[str, Path], digits_split: DigitsSplit, cnn_reference: np.ndarray, tmp_path: Path
) -> None:
    """The digits CNN's .pt2 program: conv1 reads the image (a scale node), conv2 the ReLU of conv1 (fold),
    fc the flattened map (a scale node); equalization may precede it; the export runs in onnxruntime with
    the scale nodes as Muls and reproduces the stored KL."""
    golden = open_compressible(cnn_files["torch_export"], "torch_export")
    name = golden.inputs[0].name
    calib, held = {name: digits_split.x_train[:512]}, {name: digits_split.x_test}
    methods = [MethodSpec("equalization"), MethodSpec("smoothquant"), MethodSpec("bias_correction")]
    w4 = WeightQuant(4, per_channel=True)
    outcome = recover(golden, w4, calib, held, digits_split.y_test, methods)
    folds = {tuple(g["layers"]): g["fold"] for g in outcome.steps[2].details["groups"]}
    assert folds == {("conv1",): "scale node", ("conv2",): "conv", ("fc",): "scale node"}
    # the API serves the stored step typed: no field arrives untyped (extra)
    from backend.api.recovery_schemas import RecoveryStepOut

    served = RecoveryStepOut.model_validate(outcome.summary()["steps"][2])
    assert served.details.groups is not None and len(served.details.groups) == 3
    assert not served.details.model_extra and not any(g.model_extra for g in served.details.groups)
    path, manifest = export_recovered(golden, outcome, tmp_path, calib, held, digits_split.y_test)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: digits_split.x_test})[0].astype(np.float64)
    ref = cnn_reference.astype(np.float64)
    kl = rel_entr(softmax(ref, axis=1), softmax(out, axis=1)).sum(axis=1).mean()
    np.testing.assert_allclose(kl, outcome.steps[-1].fidelity["kl_mean"], rtol=1e-3)
    np.testing.assert_allclose(kl, manifest["metrics"]["measured"]["kl_mean"], rtol=1e-4)


def test_the_api_parameters_of_smoothquant_are_the_engines() -> None:
    from backend.recovery_contracts import SmoothQuantIn

    api = SmoothQuantIn().model_dump(exclude={"name"})
    assert api == asdict(SmoothQuantParams())
    MethodSpec("smoothquant", api)


# ------------------------------------------------------------------------------- ONNX golden models


@pytest.fixture(scope="module")
def net_onnx(net: Net, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from worker.demo.models import export_onnx

    return export_onnx(
        net, _data(2, 9)["x"], tmp_path_factory.mktemp("smooth_onnx") / "net.onnx", input_name="x"
    )


@pytest.mark.parametrize("alpha", [0.5, 0.8])
def test_onnx_scales_are_the_numpy_ones_folded_or_in_scale_nodes_and_keep_the_function(
    net: Net, net_onnx: Path, alpha: float
) -> None:
    """On the ONNX file: fc2's 1/s folds into fc1 through the Relu; fc1 (the model input) and the two heads
    (a LayerNorm, which the ONNX path does not fold into) get scale nodes. The scales are s_j = max|X_j|^α /
    max|W_j|^(1−α) from the torch model's own activations and weights, and the float outputs stay."""
    from worker.engine.compression.onnx_backend import OnnxCompressible
    from worker.engine.recovery.onnx_model import OnnxRecovery
    from worker.engine.recovery.onnx_smoothquant import smooth_onnx

    golden = open_compressible(net_onnx, "onnx")
    assert isinstance(golden, OnnxCompressible)
    names = [layer.name for layer in golden.layers()]
    assert names == ["fc1", "fc2", "head_a", "head_b"]
    recovery = OnnxRecovery(golden)
    x = _data(512, 0)
    result = smooth_onnx(recovery, dict.fromkeys(names, WeightQuant(8)), x, SmoothQuantParams(alpha=alpha))
    groups = {tuple(g.layers): g for g in result.groups}
    assert set(groups) == {("fc1",), ("fc2",), ("head_a", "head_b")}
    assert (groups[("fc2",)].fold, groups[("fc2",)].folded_into, groups[("fc2",)].through_relu) == (
        "linear",
        "fc1",
        True,
    )
    assert groups[("fc1",)].fold == groups[("head_a", "head_b")].fold == "scale node"
    seen: dict[str, np.ndarray] = {}
    hooks = [
        getattr(net, name).register_forward_pre_hook(
            lambda _m, a, name=name: seen.__setitem__(name, a[0].numpy())
        )
        for name in names
    ]
    with torch.no_grad():
        net(torch.from_numpy(x["x"]))
    for hook in hooks:
        hook.remove()
    p = _p(net)
    for layers, group in groups.items():
        expected = _s(seen[layers[0]], *(p[f"{name}.weight"] for name in layers), alpha=alpha)
        np.testing.assert_allclose(group.scales, expected, rtol=1e-5)
    smoothed = recovery.model()
    muls = [n for n in smoothed.graph.node if n.op_type == "Mul" and "__smoothed_" in n.output[0]]
    assert len(muls) == 2
    test = _data(64, 3)
    golden_out = ort.InferenceSession(str(net_onnx), providers=["CPUExecutionProvider"]).run(None, test)[0]
    out = ort.InferenceSession(smoothed.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, test
    )[0]
    np.testing.assert_allclose(out, golden_out, rtol=1e-5, atol=1e-5 * np.abs(golden_out).max())


def test_onnx_smoothing_lowers_the_held_out_kl_with_an_outlier_channel(net_onnx: Path) -> None:
    config = Quantize(WeightQuant(8, per_channel=False), ActivationQuant(8))
    golden = open_compressible(net_onnx, "onnx")
    outcome = recover(golden, config, _data(512, 0), _data(256, 1), None, [MethodSpec("smoothquant")])
    kl = [step.fidelity["kl_mean"] for step in outcome.steps]
    assert kl[1] < kl[0] / 4, kl
