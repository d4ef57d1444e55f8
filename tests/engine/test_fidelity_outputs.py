"""Which outputs are compared, and as what: NaN outputs are counted, excluded and warned about,
mismatched outputs are refused, several outputs are matched by position with their tensor kind, probability
outputs are detected, and regression and embedding outputs get their own metrics.

compare_models and bind_inputs with tiny numpy-backed fake runners (tests/support/fake_runners.py);
references computed independently from the runners' full-dataset outputs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cosine as scipy_cosine_distance
from scipy.special import softmax
from sklearn.metrics import mean_squared_error, r2_score
from sklearn.neighbors import NearestNeighbors

from tests.support.fake_runners import LinearRunner, MultiRunner, N, run_all, summary_json
from worker.engine.errors import OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models

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
