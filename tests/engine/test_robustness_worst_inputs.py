"""The corrupted inputs of each robustness point's worst samples (worker/engine/robustness/worst_inputs.py)
on the digits CNN, over several chunks: the rows handed over are an independent re-corruption of those
samples (brightness and Gaussian noise re-made here with numpy from the documented seeding, FGSM with
torch.autograd on a module loaded here), and the samples are the worst ones by scipy's KL on onnxruntime's
outputs for the re-corrupted dataset."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch
from scipy.special import softmax
from scipy.stats import entropy

from tests.engine.test_robustness_adversarial import reference_fgsm
from worker.demo.models import DemoBundle
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders import load_model
from worker.engine.robustness import SLICES, RobustnessParams, evaluate_robustness
from worker.engine.robustness import run as robustness_run
from worker.engine.types import TensorSpec

BATCH = 32
SEED = 7
Kept = dict[tuple[str, int, int], dict[str, np.ndarray]]
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data(digits_bundle: DemoBundle) -> tuple[np.ndarray, np.ndarray]:
    with np.load(digits_bundle.test_npz) as npz:
        return npz["input"], npz["labels"]


def run(
    bundle: DemoBundle, x: np.ndarray, labels: np.ndarray, golden_format: str, slices: tuple[str, ...]
) -> tuple[dict[str, Any], Kept]:
    golden_file = bundle.golden_pt2 if golden_format == "torch_export" else bundle.golden_onnx
    golden = load_model(golden_file, golden_format)
    compressed = load_model(bundle.int8_onnx, "onnx")
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, {"input": x}, labels, fidelity)
    kept: Kept = {}

    def sink(name: str, severity: int, index: int, rows: dict[str, np.ndarray]) -> bool:
        assert (name, severity, index) not in kept
        kept[(name, severity, index)] = {k: v.copy() for k, v in rows.items()}
        return True

    document = evaluate_robustness(
        golden, compressed, {"input": x}, labels, fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=slices, seed=SEED), primary_output=clean.primary_output, worst_inputs=sink,
    )  # fmt: skip
    return document, kept


def ort_kl(bundle: DemoBundle, x: np.ndarray) -> np.ndarray:
    """Per-sample KL(golden ‖ int8) of the float ONNX golden and its int8 copy, with scipy."""
    out = []
    for path in (bundle.golden_onnx, bundle.int8_onnx):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        out.append(softmax(session.run(None, {"input": x})[0].astype(np.float64), axis=1))
    return np.asarray(entropy(out[0], out[1], axis=1))


def numpy_corruption(name: str, severity: int, x: np.ndarray) -> np.ndarray:
    """Brightness and Gaussian noise as transforms.py documents them: + value · std; noise drawn per
    block of 2^20 values (16384 digit rows: one block here) from default_rng([seed, crc32(name), severity,
    block])."""
    value = SLICES[name].values[severity - 1]
    std = float(np.std(x.astype(np.float64)))
    if name == "brightness":
        return (x.astype(np.float64) + value * std).astype(x.dtype)
    rows = 2**20 // int(np.prod(x.shape[1:]))
    assert len(x) <= rows
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode()), severity, 0])
    noise = rng.standard_normal((rows, *x.shape[1:]))[: len(x)]
    return (x.astype(np.float64) + noise * (value * std)).astype(x.dtype)


def check_point(point: dict[str, Any], name: str, kept: Kept, expected: np.ndarray, kl: np.ndarray) -> None:
    severity = point["severity"]
    worst = [w["sample_index"] for w in point["worst_samples"]]
    assert len(worst) == 10 and all(w["image"] for w in point["worst_samples"])
    mine = sorted(i for (s, sev, i) in kept if (s, sev) == (name, severity))
    assert mine == sorted(worst), (name, severity)
    for index in worst:
        np.testing.assert_allclose(kept[(name, severity, index)]["input"], expected[index], rtol=0, atol=1e-6)
    # The worst by scipy's KL on the re-corrupted dataset: every kept sample at least as bad as every other.
    others = np.delete(kl, worst)
    assert kl[worst].min() >= others.max() - 1e-6 * max(1.0, others.max()), (name, severity)
    for w in point["worst_samples"]:
        assert w["divergence"] == pytest.approx(kl[w["sample_index"]], rel=1e-4, abs=1e-9)


def test_kept_rows_are_the_worst_samples_recorrupted(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    x, labels = data
    monkeypatch.setattr(robustness_run, "CHUNK_BUDGET_BYTES", 3 * BATCH * x[:1].nbytes)  # 4 chunks of 96
    assert robustness_run.chunk_rows({"input": x}, BATCH) == 3 * BATCH < len(x)
    document, kept = run(digits_bundle, x, labels, "onnx", ("brightness", "gaussian_noise"))
    assert len(kept) == 2 * 3 * 10  # slices x severities x worst samples, nothing more held
    for slice_doc in document["slices"]:
        for point in slice_doc["points"]:
            expected = numpy_corruption(slice_doc["name"], point["severity"], x)
            check_point(point, slice_doc["name"], kept, expected, ort_kl(digits_bundle, expected))


def test_adversarial_rows_are_the_crafted_inputs(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    x, labels = data
    monkeypatch.setattr(robustness_run, "CHUNK_BUDGET_BYTES", 4 * BATCH * x[:1].nbytes)  # 3 chunks of 128
    document, kept = run(digits_bundle, x, labels, "torch_export", ("fgsm",))
    module = torch.export.load(str(digits_bundle.golden_pt2)).module()
    low, high = float(x.min()), float(x.max())
    (slice_doc,) = document["slices"]
    for point in slice_doc["points"]:
        adversarial = reference_fgsm(module, x, point["value"] * (high - low), low, high)
        check_point(point, "fgsm", kept, adversarial, ort_kl_pt2(digits_bundle, module, adversarial))


def ort_kl_pt2(bundle: DemoBundle, module: Any, x: np.ndarray) -> np.ndarray:
    """KL(torch golden ‖ int8 ONNX) per sample, with scipy."""
    with torch.no_grad():
        g = module(torch.from_numpy(x)).double().numpy()
    session = ort.InferenceSession(str(bundle.int8_onnx), providers=["CPUExecutionProvider"])
    c = session.run(None, {"input": x})[0].astype(np.float64)
    return np.asarray(entropy(softmax(g, axis=1), softmax(c, axis=1), axis=1))


def test_no_sink_no_image_field_and_non_image_inputs_keep_nothing(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray]
) -> None:
    x, labels = data
    golden = load_model(digits_bundle.golden_onnx, "onnx")
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, {"input": x[:64]}, labels[:64], fidelity)
    params = RobustnessParams(slices=("contrast",), severities=(2,))
    plain = evaluate_robustness(
        golden,
        compressed,
        {"input": x[:64]},
        labels[:64],
        fidelity,
        clean.per_sample,
        "classification",
        params,
    )
    assert all("image" not in w for w in plain["slices"][0]["points"][0]["worst_samples"])
    calls: list[Any] = []
    flat = np.random.default_rng(0).normal(size=(40, 6))
    w = np.random.default_rng(1).normal(size=(6, 3))
    from tests.engine.test_robustness_slices import Linear

    lin, lin_q = Linear(w), Linear(np.round(w, 1))
    flat_clean = compare_models(lin, lin_q, {"x": flat}, None, FidelityParams(batch_size=16))
    doc = evaluate_robustness(
        lin, lin_q, {"x": flat}, None, FidelityParams(batch_size=16), flat_clean.per_sample, "classification",
        RobustnessParams(slices=("gaussian_noise",), severities=(1,)),
        worst_inputs=lambda *a: calls.append(a) or True,
    )  # fmt: skip
    assert calls == []  # flat features have no picture
    assert [w["image"] for w in doc["slices"][0]["points"][0]["worst_samples"]] == [False] * 10


def test_a_twin_that_failed_to_load_is_the_attacks_skip_reason(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray]
) -> None:
    """The loader's problem replaces "pair a twin" (the job did pair one); other slices still run."""
    x, labels = data[0][:64], data[1][:64]
    golden = load_model(digits_bundle.golden_onnx, "onnx")
    compressed = load_model(digits_bundle.int8_onnx, "onnx")
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, {"input": x}, labels, fidelity)
    problem = "the PyTorch twin could not be loaded: no such file"
    for twin_problem, expected in ((problem, problem), (None, "twin_model_id")):
        doc = evaluate_robustness(
            golden, compressed, {"input": x}, labels, fidelity, clean.per_sample, "classification",
            RobustnessParams(slices=("brightness", "fgsm", "pgd"), severities=(1,)), twin_problem=twin_problem,
        )  # fmt: skip
        assert [s["name"] for s in doc["slices"]] == ["brightness"]
        assert [s["name"] for s in doc["skipped"]] == ["fgsm", "pgd"]
        assert all(expected in s["reason"] for s in doc["skipped"])
        assert (doc["skipped"][0]["reason"] == problem) is (twin_problem is not None)


INFINITE_ROW = 17


class OneInfinite:
    """The digits model (onnxruntime) with one sample's logits replaced by ±1e308 in float64: golden
    [1e308, -1e308, 0...], compressed [-1e308, 1e308, 0...], so its outputs stay finite while its
    log-softmax underflows to -inf where the other model is sure, and its KL is +inf. The dataset's
    integer "row" array (no slice changes it) says which row is which; the model never sees it."""

    def __init__(self, inner: Any, sign: float) -> None:
        self.inner, self.sign = inner, sign

    @property
    def inputs(self) -> list[TensorSpec]:
        return [*self.inner.inputs, TensorSpec("row", ("batch",), "int64")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec(o.name, o.shape, "float64") for o in self.inner.outputs]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = self.inner.run({k: v for k, v in feeds.items() if k != "row"})
        return {k: self.marked(np.asarray(v, dtype=np.float64), feeds["row"]) for k, v in out.items()}

    def marked(self, logits: np.ndarray, rows: np.ndarray) -> np.ndarray:
        logits[rows == INFINITE_ROW] = 0.0
        logits[rows == INFINITE_ROW, :2] = [self.sign * 1e308, -self.sign * 1e308]
        return logits


@pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning"
)
def test_an_infinite_kl_is_not_ranked_and_the_kept_rows_are_the_listed_samples(
    digits_bundle: DemoBundle, data: tuple[np.ndarray, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sample of +inf KL: the document lists the 10 worst finite samples (not 9), and the corrupted
    rows handed over belong to exactly those 10 (the document and RunningWorst rank alike)."""
    x, labels = data[0][:256], data[1][:256]
    arrays = {"input": x, "row": np.arange(len(x), dtype=np.int64)}
    monkeypatch.setattr(robustness_run, "CHUNK_BUDGET_BYTES", 2 * BATCH * x[:1].nbytes)  # 4 chunks of 64
    golden = OneInfinite(load_model(digits_bundle.golden_onnx, "onnx"), 1.0)
    compressed = OneInfinite(load_model(digits_bundle.int8_onnx, "onnx"), -1.0)
    fidelity = FidelityParams(batch_size=BATCH)
    clean = compare_models(golden, compressed, arrays, labels, fidelity)
    kept: Kept = {}

    def sink(name: str, severity: int, index: int, rows: dict[str, np.ndarray]) -> bool:
        kept[(name, severity, index)] = rows
        return True

    document = evaluate_robustness(
        golden, compressed, arrays, labels, fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=("brightness",), seed=SEED), primary_output=clean.primary_output,
        worst_inputs=sink,
    )  # fmt: skip
    for point in document["slices"][0]["points"]:
        # scipy's KL of the re-corrupted rows, the marked row's from the ±1e308 logits: +inf
        expected = numpy_corruption("brightness", point["severity"], x)
        kl = ort_kl(digits_bundle, expected)
        kl[INFINITE_ROW] = entropy(softmax([1e308, -1e308, 0.0]), softmax([-1e308, 1e308, 0.0]))
        assert np.isposinf(kl[INFINITE_ROW])
        finite = np.flatnonzero(np.isfinite(kl))
        reference = finite[np.argsort(-kl[finite], kind="stable")][:10].tolist()
        listed = [w["sample_index"] for w in point["worst_samples"]]
        assert listed == reference and INFINITE_ROW not in listed
        mine = sorted(i for (_, severity, i) in kept if severity == point["severity"])
        assert mine == sorted(listed) and all(w["image"] for w in point["worst_samples"])
        assert np.isposinf(point["kl_mean_nats"])  # the mean says it: the sample is counted there
