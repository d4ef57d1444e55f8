"""compare_models and bind_inputs with tiny numpy-backed fake runners; references computed independently
from the runners' full-dataset outputs with scipy / scikit-learn / direct formulas."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from scipy.spatial.distance import cosine as scipy_cosine_distance
from scipy.special import softmax
from scipy.stats import entropy as scipy_entropy
from sklearn.metrics import accuracy_score, mean_squared_error, r2_score, top_k_accuracy_score
from sklearn.neighbors import NearestNeighbors

from worker.engine.errors import DatasetMismatchError, EngineError, JobCancelled, OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, FidelityReport, bind_inputs, compare_models
from worker.engine.types import Runner, TensorSpec

N, D, C = 360, 12, 10


class LinearRunner:
    """x @ W + bias, with an optional output transform; records the batch sizes it was called with."""

    def __init__(
        self,
        weight: np.ndarray,
        bias: np.ndarray | None = None,
        *,
        input_name: str = "x",
        output_name: str = "logits",
        input_shape: tuple[Any, ...] | None = None,
        output_shape: tuple[Any, ...] | None = None,
        transform: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.weight = weight
        self.bias = np.zeros(weight.shape[1]) if bias is None else bias
        self.input_name, self.output_name = input_name, output_name
        self._in_shape = input_shape or ("batch", weight.shape[0])
        self._out_shape = output_shape or ("batch", weight.shape[1])
        self.transform = transform
        self.calls: list[int] = []

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec(self.input_name, self._in_shape, "float64")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec(self.output_name, self._out_shape, "float64")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x = np.asarray(feeds[self.input_name])
        self.calls.append(len(x))
        y = x.reshape(len(x), -1) @ self.weight + self.bias
        if self.transform is not None:
            y = self.transform(x, y)
        return {self.output_name: y}


class MultiRunner:
    """Two inputs, two outputs: 'logits' (N, C) and 'feat' (N, 2, 3)."""

    def __init__(self, w: np.ndarray, v: np.ndarray, names: tuple[str, str] = ("logits", "feat")) -> None:
        self.w, self.v, self.names = w, v, names

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("a", ("batch", D), "float32"), TensorSpec("b", ("batch", 3), "float32")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [
            TensorSpec(self.names[0], ("batch", C), "float32"),
            TensorSpec(self.names[1], ("batch", 2, 3), "float32"),
        ]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        a, b = feeds["a"].astype(np.float64), feeds["b"].astype(np.float64)
        feat = (b @ self.v).reshape(len(b), 2, 3)
        return {self.names[0]: a @ self.w, self.names[1]: feat}


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(D, C))
    return {
        "x": rng.normal(size=(N, D)),
        "labels": rng.integers(0, C, size=N),
        "w": w,
        "w_noisy": w + rng.normal(0, 0.25, size=w.shape),
    }


def run_all(runner: Runner, x: np.ndarray) -> np.ndarray:
    """The reference outputs: one call over the whole dataset."""
    out = runner.run({runner.inputs[0].name: x})
    return np.asarray(out[runner.outputs[0].name], dtype=np.float64)


def summary_json(report: FidelityReport) -> dict[str, Any]:
    text = json.dumps(report.summary_dict(), allow_nan=False)  # fails on NaN/inf or numpy scalars
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def assert_tree_close(a: Any, b: Any, path: str = "") -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            assert_tree_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_tree_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


# ---------------------------------------------------------------------------------------------- bind_inputs


def test_bind_inputs_mismatched_shape_names_expected_and_given() -> None:
    spec = TensorSpec("input", ("batch", 1, 8, 8), "float32")
    with pytest.raises(DatasetMismatchError) as err:
        bind_inputs({"x": np.zeros((360, 64))}, [spec])
    msg = str(err.value)
    assert "'input'" in msg and "(batch, 1, 8, 8)" in msg and "(360, 64)" in msg


def test_bind_inputs_single_array_any_name_ignores_labels_and_casts() -> None:
    spec = TensorSpec("input", ("batch", 1, 8, 8), "float32")
    x = np.random.default_rng(1).normal(size=(5, 1, 8, 8))
    bound = bind_inputs({"whatever": x, "labels": np.arange(5)}, [spec])
    assert list(bound) == ["input"]
    assert bound["input"].dtype == np.float32
    np.testing.assert_array_equal(bound["input"], x.astype(np.float32))
    images = np.zeros((5, 1, 8, 8), dtype=np.uint8)
    assert bind_inputs({"x": images}, [spec])["input"].dtype == np.float32


def test_bind_inputs_fixed_and_symbolic_dims() -> None:
    specs = [TensorSpec("ids", (1, "seq"), "int64"), TensorSpec("mask", (None, "seq"), "int64")]
    bound = bind_inputs({"ids": np.zeros((4, 7), np.int32), "mask": np.ones((4, 9), np.int64)}, specs)
    assert bound["ids"].dtype == np.int64 and bound["ids"].shape == (4, 7)


def test_bind_inputs_errors() -> None:
    specs = [TensorSpec("a", ("batch", 3), "float32"), TensorSpec("b", ("batch", 2), "float32")]
    with pytest.raises(DatasetMismatchError, match=r"expects inputs \['a', 'b'\]"):
        bind_inputs({"a": np.zeros((4, 3))}, specs)
    with pytest.raises(DatasetMismatchError, match="different lengths"):
        bind_inputs({"a": np.zeros((4, 3)), "b": np.zeros((5, 2))}, specs)
    with pytest.raises(
        DatasetMismatchError, match=r"expects shape \(batch, 3\) but the dataset gives \(4, 3, 1\)"
    ):
        bind_inputs({"a": np.zeros((4, 3, 1)), "b": np.zeros((4, 2))}, specs)
    int_spec = [TensorSpec("ids", ("batch", 3), "int32")]
    with pytest.raises(DatasetMismatchError, match=r"int32.*float64"):
        bind_inputs({"ids": np.zeros((4, 3))}, int_spec)
    with pytest.raises(DatasetMismatchError, match="int32"):
        bind_inputs({"ids": np.full((4, 3), 2**40, dtype=np.int64)}, int_spec)
    with pytest.raises(DatasetMismatchError, match="scalar"):
        bind_inputs({"ids": np.array(3)}, int_spec)


# ---------------------------------------------------------------------------------------------- classification


def test_classification_metrics_match_references(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    x, labels = data["x"], data["labels"]
    report = compare_models(golden, compressed, {"x": x}, labels, FidelityParams(batch_size=32, top_k=3))
    m = summary_json(report)["outputs"]["logits"]
    a, b = run_all(golden, x), run_all(compressed, x)
    p, q = softmax(a, axis=1), softmax(b, axis=1)

    kl = scipy_entropy(p, q, axis=1)
    assert m["kind"] == "classification"
    assert m["kl_mean_nats"] == pytest.approx(kl.mean(), rel=1e-9)
    assert m["kl_mean_bits"] == pytest.approx(scipy_entropy(p, q, axis=1, base=2).mean(), rel=1e-9)
    assert m["kl_reverse_mean_nats"] == pytest.approx(scipy_entropy(q, p, axis=1).mean(), rel=1e-9)
    assert m["kl_max_nats"] == pytest.approx(kl.max(), rel=1e-9)
    mix = (p + q) / 2
    js = 0.5 * scipy_entropy(p, mix, axis=1) + 0.5 * scipy_entropy(q, mix, axis=1)
    assert m["js_mean_nats"] == pytest.approx(js.mean(), rel=1e-9)
    assert m["cross_entropy_mean_nats"] == pytest.approx((-(p * np.log(q)).sum(axis=1)).mean(), rel=1e-9)
    assert m["entropy_golden_mean_nats"] == pytest.approx(scipy_entropy(p, axis=1).mean(), rel=1e-9)
    assert m["entropy_compressed_mean_nats"] == pytest.approx(scipy_entropy(q, axis=1).mean(), rel=1e-9)
    assert m["tv_mean"] == pytest.approx(0.5 * np.abs(p - q).sum(axis=1).mean(), rel=1e-9)

    g_cls, c_cls = a.argmax(axis=1), b.argmax(axis=1)
    assert m["top1_match"] == pytest.approx(accuracy_score(g_cls, c_cls))
    assert m["topk_agreement"] == pytest.approx(top_k_accuracy_score(g_cls, b, k=3, labels=np.arange(C)))
    assert m["confidence_shift"] == pytest.approx(q.max(axis=1).mean() - p.max(axis=1).mean(), rel=1e-9)
    flips = [i for i in range(N) if g_cls[i] != c_cls[i]]
    assert m["label_flips"]["count"] == len(flips) > 0
    assert [f["index"] for f in m["label_flips"]["items"]] == flips
    assert [f["compressed"] for f in m["label_flips"]["items"]] == c_cls[flips].tolist()

    lab = m["labels"]
    acc_g, acc_c = accuracy_score(labels, g_cls), accuracy_score(labels, c_cls)
    assert lab["golden_top1_accuracy"] == pytest.approx(acc_g)
    assert lab["compressed_top1_accuracy"] == pytest.approx(acc_c)
    assert lab["top1_accuracy_drop_pp"] == pytest.approx(100 * (acc_g - acc_c))
    top3_g = top_k_accuracy_score(labels, a, k=3, labels=np.arange(C))
    top3_c = top_k_accuracy_score(labels, b, k=3, labels=np.arange(C))
    assert lab["golden_topk_accuracy"] == pytest.approx(top3_g)
    assert lab["compressed_topk_accuracy"] == pytest.approx(top3_c)
    assert lab["topk_accuracy_drop_pp"] == pytest.approx(100 * (top3_g - top3_c))

    ps = report.per_sample
    np.testing.assert_allclose(ps["kl"], kl, rtol=1e-9, atol=1e-15)
    assert ps["golden_class"].tolist() == g_cls.tolist()
    assert ps["label"].tolist() == labels.tolist()
    expected_flag = (kl > 0.1) | (g_cls != c_cls)
    assert np.any((kl > 0.1) & (g_cls == c_cls))  # flagged by KL alone happens here
    relaxed = compare_models(golden, compressed, {"x": x}, None, FidelityParams(threshold_kl=None))
    assert relaxed.per_sample["flagged"].tolist() == (g_cls != c_cls).tolist()
    assert ps["flagged"].tolist() == expected_flag.tolist()
    assert report.per_sample_summary["n_flagged"] == int(expected_flag.sum())


def reference_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> tuple[float, list[int]]:
    """A loop over samples and bins (m/n, (m+1)/n], written independently of the implementation."""
    conf = [float(max(row)) for row in probs]
    correct = [int(np.argmax(row)) == int(y) for row, y in zip(probs, labels, strict=True)]
    ece, counts = 0.0, []
    for m in range(n_bins):
        lo, hi = m / n_bins, (m + 1) / n_bins
        idx = [i for i, c in enumerate(conf) if lo < c <= hi]
        counts.append(len(idx))
        if idx:
            gap = abs(sum(correct[i] for i in idx) / len(idx) - sum(conf[i] for i in idx) / len(idx))
            ece += len(idx) / len(conf) * gap
    return ece, counts


def test_calibration_matches_loop_reference(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"] * 2.0)
    x, labels = data["x"], data["labels"]
    report = compare_models(golden, compressed, {"x": x}, labels, FidelityParams(batch_size=50))
    cal = summary_json(report)["outputs"]["logits"]["labels"]["calibration"]
    for role, runner in (("golden", golden), ("compressed", compressed)):
        ece, counts = reference_ece(softmax(run_all(runner, x), axis=1), labels)
        assert cal[role]["ece"] == pytest.approx(ece, rel=1e-12)
        assert [b["count"] for b in cal[role]["bins"]] == counts
    assert cal["ece_shift"] == pytest.approx(cal["compressed"]["ece"] - cal["golden"]["ece"], rel=1e-12)


def test_numerical_metrics_and_sqnr_match_direct_formulas(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    x = data["x"]
    m = summary_json(compare_models(golden, compressed, {"x": x}, None, FidelityParams(batch_size=13)))
    out = m["outputs"]["logits"]
    a, b = run_all(golden, x), run_all(compressed, x)
    assert out["sqnr_db"] == pytest.approx(10 * math.log10(np.sum(a**2) / np.sum((a - b) ** 2)), rel=1e-12)
    assert out["sqnr_db_infinite"] is False
    assert out["mse"] == pytest.approx(mean_squared_error(a.ravel(), b.ravel()), rel=1e-12)
    assert out["mae"] == pytest.approx(np.abs(a - b).mean(), rel=1e-12)
    assert out["max_abs_err"] == pytest.approx(np.abs(a - b).max(), rel=1e-12)
    cos = [1 - scipy_cosine_distance(u, v) for u, v in zip(a, b, strict=True)]
    assert out["cosine_mean"] == pytest.approx(np.mean(cos), rel=1e-12)
    assert out["cosine_min"] == pytest.approx(np.min(cos), rel=1e-12)
    assert out["labels"] is None


def test_streaming_equals_one_batch(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    args = ({"x": data["x"]}, data["labels"])
    small = compare_models(golden, compressed, *args, FidelityParams(batch_size=7))
    whole = compare_models(golden, compressed, *args, FidelityParams(batch_size=10_000))
    assert len(golden.calls) == math.ceil(N / 7) + 1
    s, w = summary_json(small), summary_json(whole)
    s["params"].pop("batch_size")
    w["params"].pop("batch_size")
    assert_tree_close(s, w)
    assert small.per_sample.keys() == whole.per_sample.keys()
    for key in small.per_sample:
        np.testing.assert_allclose(small.per_sample[key], whole.per_sample[key], rtol=1e-12, atol=1e-15)


def test_identical_models_give_exactly_zero_divergence(data: dict[str, np.ndarray]) -> None:
    golden, same = LinearRunner(data["w"]), LinearRunner(data["w"].copy())
    report = compare_models(golden, same, {"x": data["x"]}, data["labels"], FidelityParams(batch_size=64))
    m = summary_json(report)["outputs"]["logits"]
    for key in (
        "kl_mean_nats",
        "kl_reverse_mean_nats",
        "js_mean_nats",
        "tv_mean",
        "kl_max_nats",
        "mse",
        "mae",
    ):
        assert m[key] == 0.0, key
    assert m["max_abs_err"] == 0.0
    assert m["top1_match"] == 1.0 and m["topk_agreement"] == 1.0 and m["topk_overlap"] == 1.0
    assert m["cosine_mean"] == 1.0 and m["cosine_min"] == 1.0
    assert m["sqnr_db"] is None and m["sqnr_db_infinite"] is True
    assert m["label_flips"]["count"] == 0 and m["confidence_shift"] == 0.0
    assert m["labels"]["top1_accuracy_drop_pp"] == 0.0
    assert np.all(report.per_sample["kl"] == 0.0) and not report.per_sample["flagged"].any()
    assert report.per_sample_summary["concentration"]["verdict"] == "uniform"


# ---------------------------------------------------------------------------------------------- non-finite outputs


def nan_where_first_feature_high(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    y = y.copy()
    y[x[:, 0] > 1.2, 0] = np.nan
    y[x[:, 1] > 2.0, 1] = np.inf
    return y


def test_nan_outputs_are_counted_excluded_and_warned(data: dict[str, np.ndarray]) -> None:
    x, labels = data["x"], data["labels"]
    golden = LinearRunner(data["w"])
    compressed = LinearRunner(data["w_noisy"], transform=nan_where_first_feature_high)
    report = compare_models(golden, compressed, {"x": x}, labels, FidelityParams(batch_size=16))
    s = summary_json(report)
    bad = (x[:, 0] > 1.2) | (x[:, 1] > 2.0)
    assert 0 < bad.sum() < N
    m = s["outputs"]["logits"]
    assert m["n_nonfinite_compressed"] == int(bad.sum()) and m["n_nonfinite_golden"] == 0
    assert m["n_finite"] == s["n_finite"] == int((~bad).sum())
    assert any("NaN/Inf" in w and str(int(bad.sum())) in w for w in s["warnings"])
    assert report.per_sample["finite"].tolist() == (~bad).tolist()
    assert report.per_sample["flagged"][bad].all()
    assert np.isnan(report.per_sample["kl"][bad]).all()

    clean = compare_models(
        golden, LinearRunner(data["w_noisy"]), {"x": x[~bad]}, labels[~bad], FidelityParams(batch_size=16)
    )
    c = summary_json(clean)["outputs"]["logits"]
    for key in ("kl_mean_nats", "js_mean_nats", "mse", "sqnr_db", "cosine_min", "top1_match"):
        assert m[key] == pytest.approx(c[key], rel=1e-12), key
    assert m["labels"]["compressed_top1_accuracy"] == pytest.approx(c["labels"]["compressed_top1_accuracy"])


# ---------------------------------------------------------------------------------------------- output matching


def test_output_mismatch_errors(data: dict[str, np.ndarray]) -> None:
    golden = MultiRunner(data["w"], np.ones((3, 6)))
    one_output = LinearRunner(data["w"], input_name="a")
    feeds = {"a": data["x"].astype(np.float32), "b": np.ones((N, 3), np.float32)}
    with pytest.raises(OutputMismatchError) as err:
        compare_models(golden, one_output, feeds, None, FidelityParams())
    assert "['logits', 'feat']" in str(err.value) and "['logits']" in str(err.value)

    narrower = LinearRunner(data["w"][:, :9])
    with pytest.raises(OutputMismatchError, match=r"\(batch, 10\).*\(batch, 9\)"):
        compare_models(LinearRunner(data["w"]), narrower, {"x": data["x"]}, None, FidelityParams())
    dynamic = LinearRunner(data["w"][:, :9], output_shape=("batch", "classes"))
    with pytest.raises(OutputMismatchError, match=r"\(10,\).*\(9,\)"):
        compare_models(LinearRunner(data["w"]), dynamic, {"x": data["x"]}, None, FidelityParams())


def test_multi_output_by_position_with_tensor_kind(data: dict[str, np.ndarray]) -> None:
    rng = np.random.default_rng(3)
    v = rng.normal(size=(3, 6))
    golden = MultiRunner(data["w"], v)
    renamed = MultiRunner(data["w_noisy"], v + 0.01, names=("scores", "features"))
    feeds = {"a": data["x"], "b": rng.normal(size=(N, 3))}
    report = compare_models(golden, renamed, feeds, data["labels"], FidelityParams(batch_size=40))
    s = summary_json(report)
    assert s["output_matching"] == "position"
    assert any("matched by position" in w for w in s["warnings"])
    assert s["outputs"]["logits"]["compressed_output"] == "scores"
    feat = s["outputs"]["feat"]
    assert feat["kind"] == "tensor" and "kl_mean_nats" not in feat
    a = golden.run({"a": feeds["a"].astype(np.float32), "b": feeds["b"].astype(np.float32)})["feat"]
    b = renamed.run({"a": feeds["a"].astype(np.float32), "b": feeds["b"].astype(np.float32)})["features"]
    assert feat["mse"] == pytest.approx(np.mean((a - b) ** 2), rel=1e-12)
    assert s["primary_output"] == "logits"


def test_compressed_inputs_matched_by_position(data: dict[str, np.ndarray]) -> None:
    golden = LinearRunner(data["w"], input_name="x")
    other = LinearRunner(data["w_noisy"], input_name="input_0")
    feeds = {"x": data["x"]}
    s = summary_json(compare_models(golden, other, feeds, None, FidelityParams()))
    assert s["outputs"]["logits"]["n_finite"] == N


# ---------------------------------------------------------------------------------------------- progress, batching


def test_progress_reports_every_batch_and_cancellation_propagates(data: dict[str, np.ndarray]) -> None:
    seen: list[tuple[int, int]] = []
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    compare_models(
        golden,
        compressed,
        {"x": data["x"]},
        None,
        FidelityParams(batch_size=100),
        lambda d, t: seen.append((d, t)),
    )
    assert seen == [(100, N), (200, N), (300, N), (360, N)]

    def cancel(done: int, total: int) -> None:
        if done >= 200:
            raise JobCancelled("cancelled by user")

    golden.calls.clear()
    with pytest.raises(JobCancelled):
        compare_models(golden, compressed, {"x": data["x"]}, None, FidelityParams(batch_size=100), cancel)
    assert golden.calls == [100, 100]


def test_fixed_batch_runner_is_called_in_padded_chunks(data: dict[str, np.ndarray]) -> None:
    fixed = LinearRunner(data["w_noisy"], input_shape=(4, D))
    dynamic = LinearRunner(data["w_noisy"])
    x = data["x"][:30]
    a = compare_models(LinearRunner(data["w"]), fixed, {"x": x}, None, FidelityParams(batch_size=9))
    b = compare_models(LinearRunner(data["w"]), dynamic, {"x": x}, None, FidelityParams(batch_size=9))
    assert set(fixed.calls) == {4}
    assert_tree_close(summary_json(a), summary_json(b))


# ---------------------------------------------------------------------------------------------- other kinds, options


def test_probability_outputs_are_detected(data: dict[str, np.ndarray]) -> None:
    golden = LinearRunner(data["w"])
    as_probs = LinearRunner(data["w"], transform=lambda _x, y: softmax(y, axis=1))
    s = summary_json(compare_models(golden, as_probs, {"x": data["x"]}, None, FidelityParams(batch_size=50)))
    m = s["outputs"]["logits"]
    assert m["outputs_are_probabilities"] == {"golden": False, "compressed": True}
    assert abs(m["kl_mean_nats"]) < 1e-9 and m["top1_match"] == 1.0
    assert any("probabilities" in note for note in s["notes"])
    forced = compare_models(
        golden, as_probs, {"x": data["x"]}, None, FidelityParams(outputs_are_probabilities=False)
    )
    # read as logits, softmax(softmax(.)) is nearly uniform: a large, wrong KL; the option is honoured
    assert forced.summary_dict()["outputs"]["logits"]["kl_mean_nats"] > 0.1


@pytest.mark.parametrize("width", [None, 1])
def test_regression_outputs(data: dict[str, np.ndarray], width: int | None) -> None:
    def squeeze(_x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return y[:, 0] if width is None else y[:, :1]

    shape = ("batch",) if width is None else ("batch", 1)
    golden = LinearRunner(data["w"], transform=squeeze, output_shape=shape)
    compressed = LinearRunner(data["w_noisy"], transform=squeeze, output_shape=shape)
    report = compare_models(
        golden, compressed, {"x": data["x"]}, data["labels"], FidelityParams(batch_size=25)
    )
    s = summary_json(report)
    m = s["outputs"]["logits"]
    a, b = run_all(golden, data["x"]), run_all(compressed, data["x"])
    assert m["kind"] == "regression"
    assert m["r2"] == pytest.approx(r2_score(a, b), rel=1e-10)
    assert m["mse"] == pytest.approx(mean_squared_error(a, b), rel=1e-12)
    assert any("labels ignored" in w for w in s["warnings"])
    assert s["per_sample_summary"]["concentration"]["measure"] == "mse"
    np.testing.assert_allclose(report.per_sample["mse"], (a.ravel() - b.ravel()) ** 2, rtol=1e-12)


def test_embedding_task(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    s = summary_json(
        compare_models(
            golden, compressed, {"x": data["x"]}, None, FidelityParams(task="embedding", batch_size=33)
        )
    )
    m = s["outputs"]["logits"]
    a, b = run_all(golden, data["x"]), run_all(compressed, data["x"])

    def nn(e: np.ndarray) -> np.ndarray:
        idx = NearestNeighbors(n_neighbors=2, metric="cosine", algorithm="brute").fit(e).kneighbors(e)[1]
        return np.where(idx[:, 0] == np.arange(len(e)), idx[:, 1], idx[:, 0])

    assert m["kind"] == "embedding" and "kl_mean_nats" not in m
    assert m["nearest_neighbour_agreement"] == pytest.approx(np.mean(nn(a) == nn(b)))
    assert 0 < m["nearest_neighbour_agreement"] < 1
    cos = [1 - scipy_cosine_distance(u, v) for u, v in zip(a, b, strict=True)]
    assert m["cosine_mean"] == pytest.approx(np.mean(cos), rel=1e-12)


def test_concentration_verdicts(data: dict[str, np.ndarray]) -> None:
    x = data["x"]
    hot = np.zeros(N, dtype=bool)
    hot[[5, 77, 200]] = True

    def perturb_few(xb: np.ndarray, y: np.ndarray) -> np.ndarray:
        y = y.copy()
        rows = np.isin(xb[:, 0], x[hot, 0])
        y[rows] = y[rows][:, ::-1]
        return y

    golden = LinearRunner(data["w"])
    report = compare_models(
        golden, LinearRunner(data["w"], transform=perturb_few), {"x": x}, None, FidelityParams()
    )
    conc = report.per_sample_summary["concentration"]
    kl = report.per_sample["kl"]
    assert set(np.flatnonzero(kl > 0)) == set(np.flatnonzero(hot))
    assert conc["verdict"] == "concentrated" and conc["worst_1pct_share"] == pytest.approx(1.0)

    report = compare_models(golden, LinearRunner(data["w"] * 1.3), {"x": x}, None, FidelityParams())
    conc = report.per_sample_summary["concentration"]
    kl = np.sort(report.per_sample["kl"])[::-1]
    assert conc["worst_10pct_share"] == pytest.approx(kl[:36].sum() / kl.sum(), rel=1e-12)
    assert conc["worst_1pct_share"] == pytest.approx(kl[:4].sum() / kl.sum(), rel=1e-12)
    assert kl[:36].sum() < 0.5 * kl.sum()  # a temperature change spreads KL over every sample
    assert conc["verdict"] == "uniform"


def test_label_flip_list_is_capped(data: dict[str, np.ndarray]) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2500, D))
    golden, other = LinearRunner(data["w"]), LinearRunner(rng.normal(size=(D, C)))
    m = summary_json(compare_models(golden, other, {"x": x}, None, FidelityParams(batch_size=500)))[
        "outputs"
    ]["logits"]
    expected = int(np.sum(run_all(golden, x).argmax(1) != run_all(other, x).argmax(1)))
    assert m["label_flips"]["count"] == expected > 1000
    assert m["label_flips"]["stored"] == 1000 and m["label_flips"]["capped"] is True


def test_labels_from_dataset_and_label_errors(data: dict[str, np.ndarray]) -> None:
    golden, compressed = LinearRunner(data["w"]), LinearRunner(data["w_noisy"])
    s = summary_json(
        compare_models(golden, compressed, {"x": data["x"], "labels": data["labels"]}, None, FidelityParams())
    )
    assert s["outputs"]["logits"]["labels"]["n"] == N
    with pytest.raises(DatasetMismatchError, match="10 classes"):
        compare_models(golden, compressed, {"x": data["x"]}, data["labels"] + 5, FidelityParams())
    with pytest.raises(DatasetMismatchError, match="shape"):
        compare_models(golden, compressed, {"x": data["x"]}, data["labels"][:-1], FidelityParams())
    with pytest.raises(DatasetMismatchError, match="no samples"):
        compare_models(golden, compressed, {"x": data["x"][:0]}, None, FidelityParams())


def test_dataset_shape_mismatch_through_compare_models() -> None:
    class ImageRunner(LinearRunner):
        @property
        def inputs(self) -> list[TensorSpec]:
            return [TensorSpec("input", ("batch", 1, 8, 8), "float32")]

        def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {self.output_name: feeds["input"].reshape(len(feeds["input"]), -1) @ self.weight}

    w = np.ones((64, 3))
    with pytest.raises(DatasetMismatchError) as err:
        compare_models(ImageRunner(w), ImageRunner(w), {"x": np.zeros((360, 64))}, None, FidelityParams())
    assert "(batch, 1, 8, 8)" in str(err.value) and "(360, 64)" in str(err.value)
    assert isinstance(err.value, EngineError)


def test_params_validation() -> None:
    with pytest.raises(ValueError):
        FidelityParams(batch_size=0)
    with pytest.raises(ValueError):
        FidelityParams(top_k=0)
    with pytest.raises(ValueError):
        FidelityParams(threshold_kl=-1.0)
    with pytest.raises(ValueError):
        FidelityParams(task="segmentation")  # type: ignore[arg-type]
