"""The fgsm and pgd robustness slices (worker/engine/robustness/adversarial.py) on the digits CNN: golden
= the torch.export program (and the TorchScript export), compressed = the int8 QDQ ONNX. The FGSM step is
checked against ε·sign of an input gradient taken here with torch.autograd.grad on a module loaded here
(and its sign against finite differences of the loss on a few coordinates); PGD against a plain loop
written here, its ε-ball and value range, and the golden loss it reaches; the document's KL against
scipy on both models' outputs on the same adversarial inputs; an ONNX golden model skips the slices with
the reason stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch
from scipy.special import softmax
from scipy.stats import entropy

from worker.demo.models import DemoBundle
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders import load_model
from worker.engine.loaders.torch_runner import TorchRunner
from worker.engine.robustness import SLICES, RobustnessParams, array_stats, evaluate_robustness
from worker.engine.robustness.adversarial import PGD_STEPS, GoldenAttack, adversarial_chunk

BATCH = 32
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data(digits_bundle: DemoBundle) -> tuple[np.ndarray, np.ndarray]:
    with np.load(digits_bundle.test_npz) as npz:
        return npz["input"], npz["labels"]


def loss_of(module: Any, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Summed cross-entropy of the module's logits against `target` (float64 softmax)."""
    return torch.nn.functional.cross_entropy(module(x).double(), target, reduction="sum")


def reference_fgsm(module: Any, x: np.ndarray, eps: float, low: float, high: float) -> np.ndarray:
    out = []
    for s in range(0, len(x), BATCH):
        xb = torch.from_numpy(x[s : s + BATCH].copy()).requires_grad_(True)
        with torch.no_grad():
            target = module(xb).argmax(1)
        (grad,) = torch.autograd.grad(loss_of(module, xb, target), xb)
        out.append((xb + eps * grad.sign()).clamp(low, high).detach().numpy())
    return np.concatenate(out)


def reference_pgd(module: Any, x: np.ndarray, eps: float, low: float, high: float) -> np.ndarray:
    out = []
    step = 2.5 * eps / PGD_STEPS
    for s in range(0, len(x), BATCH):
        clean = torch.from_numpy(x[s : s + BATCH].copy())
        with torch.no_grad():
            target = module(clean).argmax(1)
        adv = clean.clone()
        for _ in range(PGD_STEPS):
            adv.requires_grad_(True)
            (grad,) = torch.autograd.grad(loss_of(module, adv, target), adv)
            adv = torch.clamp(adv.detach() + step * grad.sign(), clean - eps, clean + eps).clamp(low, high)
        out.append(adv.numpy())
    return np.concatenate(out)


def engine_attack(runner: TorchRunner, x: np.ndarray, name: str, share: float) -> np.ndarray:
    stats = array_stats(x)
    attack = GoldenAttack(runner, 0, {"input": (stats.low, stats.high)})
    return adversarial_chunk(attack, {"input": x}, name, share, BATCH)["input"]


@pytest.mark.parametrize("fmt", ["torch_export", "torchscript"])
def test_fgsm_is_eps_times_the_sign_of_the_input_gradient(
    digits_bundle: DemoBundle, cnn_files: dict[str, Path], data: tuple[np.ndarray, np.ndarray], fmt: str
) -> None:
    x = data[0]
    path = digits_bundle.golden_pt2 if fmt == "torch_export" else cnn_files["torchscript"]
    runner = load_model(path, fmt)  # type: ignore[arg-type]
    assert isinstance(runner, TorchRunner)
    module = torch.export.load(str(path)).module() if fmt == "torch_export" else torch.jit.load(str(path))
    low, high = float(x.min()), float(x.max())
    for severity, share in enumerate(SLICES["fgsm"].values, start=1):
        eps = share * (high - low)
        ours = engine_attack(runner, x, "fgsm", share)
        np.testing.assert_allclose(ours, reference_fgsm(module, x, eps, low, high), rtol=0, atol=1e-7)
        moved = np.abs(ours - x)
        assert moved.max() == pytest.approx(eps, rel=1e-5), severity
        assert ours.min() >= low and ours.max() <= high
        # Inside the range, almost every pixel moved by exactly ε (a zero gradient leaves it).
        inside = (ours > low) & (ours < high)
        assert np.isclose(moved[inside], eps, rtol=1e-4).mean() > 0.9


def test_the_gradient_sign_agrees_with_finite_differences(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray]
) -> None:
    """Central differences of the golden loss, every coordinate of the 4 least confident samples (a
    confident sample's loss is ~1e-5: its slopes drown in float32 rounding)."""
    module = torch.export.load(str(digits_bundle.golden_pt2)).module()
    with torch.no_grad():
        probs = torch.softmax(module(torch.from_numpy(data[0])).double(), 1).max(1).values.numpy()
    x = data[0][np.argsort(probs)[:4]]
    with torch.no_grad():
        target = module(torch.from_numpy(x)).argmax(1)
    runner = load_model(digits_bundle.golden_pt2, "torch_export")
    assert isinstance(runner, TorchRunner)
    share = SLICES["fgsm"].values[0]
    step = GoldenAttack(runner, 0, {"input": (0.0, 1.0)}).craft({"input": x}, "fgsm", share)["input"] - x

    h = 1e-3
    n, d = len(x), x[0].size
    eye = np.eye(d, dtype=np.float64).reshape(d, *x.shape[1:]) * h
    plus = (x[:, None].astype(np.float64) + eye[None]).reshape(n * d, *x.shape[1:]).astype(np.float32)
    minus = (x[:, None].astype(np.float64) - eye[None]).reshape(n * d, *x.shape[1:]).astype(np.float32)
    rows = target.repeat_interleave(d)
    with torch.no_grad():

        def per_row(z: np.ndarray) -> np.ndarray:
            logits = module(torch.from_numpy(z)).double()
            return torch.nn.functional.cross_entropy(logits, rows, reduction="none").numpy()

        slope = ((per_row(plus) - per_row(minus)) / (2 * h)).reshape(x.shape)
    clear = (np.abs(slope) > 0.05 * np.abs(slope).max()) & (x + step > 0) & (x + step < 1)
    assert clear.sum() >= 20
    np.testing.assert_array_equal(np.sign(step[clear]), np.sign(slope[clear]))


def test_pgd_stays_in_the_ball_and_raises_the_golden_loss(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray]
) -> None:
    x = data[0]
    runner = load_model(digits_bundle.golden_pt2, "torch_export")
    assert isinstance(runner, TorchRunner)
    module = torch.export.load(str(digits_bundle.golden_pt2)).module()
    low, high = float(x.min()), float(x.max())
    with torch.no_grad():
        target = module(torch.from_numpy(x)).argmax(1)

    def golden_loss(z: np.ndarray) -> float:
        with torch.no_grad():
            return float(loss_of(module, torch.from_numpy(z), target))

    for share in SLICES["pgd"].values:
        eps = share * (high - low)
        pgd = engine_attack(runner, x, "pgd", share)
        np.testing.assert_allclose(pgd, reference_pgd(module, x, eps, low, high), rtol=0, atol=1e-6)
        assert np.abs(pgd - x).max() <= eps * (1 + 1e-5)
        assert pgd.min() >= low and pgd.max() <= high
        fgsm = engine_attack(runner, x, "fgsm", share)
        assert golden_loss(x) < golden_loss(fgsm) < golden_loss(pgd), share


def scipy_reference(module: Any, int8: Path, x: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    with torch.no_grad():
        g = module(torch.from_numpy(x)).double().numpy()
    session = ort.InferenceSession(str(int8), providers=["CPUExecutionProvider"])
    c = session.run(None, {session.get_inputs()[0].name: x})[0].astype(np.float64)
    return {
        "kl_mean_nats": float(entropy(softmax(g, 1), softmax(c, 1), axis=1).mean()),
        "top1_agreement": float(np.mean(g.argmax(1) == c.argmax(1))),
        "golden_accuracy": float(np.mean(g.argmax(1) == labels)),
        "compressed_accuracy": float(np.mean(c.argmax(1) == labels)),
    }


def test_both_models_are_compared_on_the_same_adversarial_inputs(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray]
) -> None:
    x, labels = data
    golden = load_model(digits_bundle.golden_pt2, "torch_export")
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, {"input": x}, labels, fidelity)
    doc = evaluate_robustness(
        golden, compressed, {"input": x}, labels, fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=("fgsm", "pgd")), primary_output=clean.primary_output,
    )  # fmt: skip
    assert doc["skipped"] == [] and [s["name"] for s in doc["slices"]] == ["fgsm", "pgd"]
    module = torch.export.load(str(digits_bundle.golden_pt2)).module()
    low, high = float(x.min()), float(x.max())
    for slice_doc, craft in zip(doc["slices"], (reference_fgsm, reference_pgd), strict=True):
        accuracies = []
        for point in slice_doc["points"]:
            adv = craft(module, x, point["value"] * (high - low), low, high)
            ref = scipy_reference(module, digits_bundle.int8_onnx, adv, labels)
            for key, value in ref.items():
                assert point[key] == pytest.approx(value, rel=1e-4, abs=1e-9), (slice_doc["name"], key)
            accuracies.append(point["golden_accuracy"])
        assert doc["clean"]["golden_accuracy"] > accuracies[0] > accuracies[2]  # the attack works


def test_an_onnx_golden_model_skips_the_attacks_with_the_reason(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray]
) -> None:
    x, labels = data
    golden = load_model(digits_bundle.golden_onnx, "onnx")
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, {"input": x[:40]}, labels[:40], fidelity)
    doc = evaluate_robustness(
        golden, compressed, {"input": x[:40]}, labels[:40], fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=("fgsm", "pgd", "contrast"), severities=(1,)),
    )  # fmt: skip
    assert [s["name"] for s in doc["slices"]] == ["contrast"]
    assert [s["name"] for s in doc["skipped"]] == ["fgsm", "pgd"]
    assert all(
        "golden model is ONNX" in s["reason"] and "twin_model_id" in s["reason"] for s in doc["skipped"]
    )
    assert doc["twin"] is None


class _Detached(torch.nn.Module):
    """A classifier whose logits are cut from the input's graph: no input gradient."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x.mean((1, 2, 3)), -x.mean((1, 2, 3))], 1).detach()


def test_a_golden_model_without_input_gradients_skips_only_the_attacks() -> None:
    from worker.engine.loaders.torch_runner import _flatten_script_output
    from worker.engine.types import TensorSpec

    module = torch.jit.script(_Detached())
    spec = TensorSpec("x", ("batch", 1, 8, 8), "float32")
    out = TensorSpec("logits", ("batch", 2), "float32")
    golden = TorchRunner(module, [spec], [out], _flatten_script_output)
    x = np.random.default_rng(0).uniform(size=(10, 1, 8, 8)).astype(np.float32)
    fidelity = FidelityParams(batch_size=4)
    clean = compare_models(golden, golden, {"x": x}, None, fidelity)
    doc = evaluate_robustness(
        golden, golden, {"x": x}, None, fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=("fgsm", "pgd", "brightness"), severities=(1,)),
    )  # fmt: skip
    assert [s["name"] for s in doc["slices"]] == ["brightness"] and doc["error"] is None
    assert [s["name"] for s in doc["skipped"]] == ["fgsm", "pgd"]
    assert all("no input gradient" in s["reason"] for s in doc["skipped"])


def _onnx_logits(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0].astype(np.float64)


def test_a_pytorch_twin_attacks_an_onnx_golden_model(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray]
) -> None:
    """Gradients from the .pt2 twin, then the ONNX golden and int8 models on the crafted inputs: every
    figure equals scipy on onnxruntime outputs of inputs crafted here on the twin's module."""
    x, labels = data[0][:96], data[1][:96]
    golden = load_model(digits_bundle.golden_onnx, "onnx")
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    twin = load_model(digits_bundle.golden_pt2, "torch_export")
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, {"input": x}, labels, fidelity)
    doc = evaluate_robustness(
        golden, compressed, {"input": x}, labels, fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=("fgsm", "pgd"), severities=(1, 3)), primary_output=clean.primary_output,
        twin=twin,
    )  # fmt: skip
    assert doc["skipped"] == [] and [s["name"] for s in doc["slices"]] == ["fgsm", "pgd"]
    assert doc["twin"]["top1_agreement"] == 1.0 and doc["twin"]["max_abs_diff_share"] < 1e-5
    module = torch.export.load(str(digits_bundle.golden_pt2)).module()
    low, high = float(x.min()), float(x.max())
    for slice_doc, craft in zip(doc["slices"], (reference_fgsm, reference_pgd), strict=True):
        for point in slice_doc["points"]:
            adv = craft(module, x, point["value"] * (high - low), low, high)
            g, c = _onnx_logits(digits_bundle.golden_onnx, adv), _onnx_logits(digits_bundle.int8_onnx, adv)
            assert point["kl_mean_nats"] == pytest.approx(
                float(entropy(softmax(g, 1), softmax(c, 1), axis=1).mean()), rel=1e-4
            )
            assert point["golden_accuracy"] == float(np.mean(g.argmax(1) == labels))
            assert point["compressed_accuracy"] == float(np.mean(c.argmax(1) == labels))
        assert slice_doc["points"][-1]["golden_accuracy"] < doc["clean"]["golden_accuracy"]  # it attacks


def test_a_twin_that_is_another_network_skips_the_attacks(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    x, labels = data[0][:40], data[1][:40]
    module = torch.export.load(str(digits_bundle.golden_pt2)).module()
    with torch.no_grad():
        for name, param in module.named_parameters():
            if name.startswith("fc"):
                param.mul_(1.05)  # a near copy: same top-1 mostly, outputs 5 % apart
    torch.jit.save(torch.jit.trace(module, torch.from_numpy(x[:2])), str(tmp_path / "twin.pt"))
    golden = load_model(digits_bundle.golden_onnx, "onnx")
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, {"input": x}, labels, fidelity)
    doc = evaluate_robustness(
        golden, compressed, {"input": x}, labels, fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=("fgsm", "pgd", "gaussian_noise"), severities=(1,)),
        twin=load_model(tmp_path / "twin.pt", "torchscript"),
    )  # fmt: skip
    assert [s["name"] for s in doc["slices"]] == ["gaussian_noise"]
    assert [s["name"] for s in doc["skipped"]] == ["fgsm", "pgd"]
    assert all("twin does not reproduce the golden model" in s["reason"] for s in doc["skipped"])
    g = _onnx_logits(digits_bundle.golden_onnx, x[:16])
    with torch.no_grad():
        t = module(torch.from_numpy(x[:16])).double().numpy()
    assert doc["twin"]["max_abs_diff_share"] == pytest.approx(np.abs(t - g).max() / np.ptp(g), rel=1e-4)
