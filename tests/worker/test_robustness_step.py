"""The fidelity job's robustness step (worker/jobs/robustness_step.py): the contract's slice names are the
engine's; a cancellation and the soft time limit go through the step (even wrapped by the engine), other
failures become the document's error; a job without the option gets no document. The out-of-distribution
dataset's metrics are numpy's; one that cannot be read or does not fit gets its own error."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any, get_args

import numpy as np
import pytest
import scipy.special
from celery.exceptions import SoftTimeLimitExceeded

from backend.contracts import RESULT_FIDELITY_ROBUSTNESS, FidelityJobParams
from backend.robustness_contracts import ROBUSTNESS_SLICES, RobustnessSlice
from worker.engine.errors import DatasetMismatchError, EngineError, JobCancelled
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.robustness import SEVERITIES, SLICES
from worker.engine.types import TensorSpec
from worker.jobs.robustness_step import robustness_results


def test_contract_names_are_the_engines() -> None:
    assert ROBUSTNESS_SLICES == tuple(SLICES) == get_args(RobustnessSlice)
    assert FidelityJobParams.model_fields["robustness"].default is None
    default = FidelityJobParams.model_validate(
        {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
        | {"robustness": {}}
    ).robustness
    assert default is not None and tuple(default.severities) == SEVERITIES


class Scaled:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("x", ("batch", 3), "float64")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec("y", ("batch", 3), "float64")]

    def run(self, feeds: Any) -> dict[str, np.ndarray]:
        return {"y": self.scale * np.asarray(feeds["x"])}


def step(robustness: dict[str, Any] | None, progress: Any = None, read_ood: Any = None) -> dict[str, Any]:
    x = np.random.default_rng(0).normal(size=(20, 3))
    runners = [Scaled(1.0), Scaled(0.9)]
    report = compare_models(runners[0], runners[1], {"x": x}, None, FidelityParams(batch_size=8))
    params = FidelityJobParams.model_validate(
        {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
        | {"robustness": robustness}
    )
    ctx = SimpleNamespace(progress=progress or (lambda fraction, message: None))
    found = robustness_results(ctx, params, runners, {"x": x}, None, report, 1.0, read_ood)  # type: ignore[arg-type]
    return found.documents


def test_no_option_no_document() -> None:
    assert step(None) == {}


def test_progress_names_the_points_and_stays_below_one() -> None:
    seen: list[tuple[float, str]] = []
    result = step({}, lambda fraction, message: seen.append((fraction, message)))
    assert result[RESULT_FIDELITY_ROBUSTNESS]["error"] is None
    assert [m for _, m in seen][-1].startswith("robustness: 3 of 3")  # only noise applies to flat inputs
    assert all(f < 1.0 for f, _ in seen)


@pytest.mark.parametrize("stop", [JobCancelled("cancelled"), SoftTimeLimitExceeded()])
def test_stops_go_through_even_wrapped(stop: BaseException, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        try:
            raise stop
        except BaseException as exc:
            raise EngineError("the runtime failed") from exc

    monkeypatch.setattr("worker.engine.robustness.evaluate_robustness", fail)
    with pytest.raises(type(stop)):
        step({})


def test_memory_failures_say_what_to_change(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise MemoryError("Unable to allocate 9.1 GiB for an array")

    monkeypatch.setattr("worker.engine.robustness.evaluate_robustness", fail)
    error = step({})[RESULT_FIDELITY_ROBUSTNESS]["error"]
    assert "out of memory" in error and "9.1 GiB" in error and "max_samples" in error


def test_ood_only_compares_the_second_dataset() -> None:
    ood = np.random.default_rng(1).normal(loc=3.0, size=(12, 3))
    dataset_id = str(uuid.uuid4())
    read = {uuid.UUID(dataset_id): ("shifted", {"x": ood})}
    document = step({"slices": [], "ood_dataset_id": dataset_id}, read_ood=read.__getitem__)
    document = document[RESULT_FIDELITY_ROBUSTNESS]
    assert document["slices"] == [] and document["error"] is None
    found = document["ood"]
    assert found["dataset_name"] == "shifted" and found["dataset_id"] == dataset_id and found["error"] is None
    # [N, 3] float outputs read as logits: the ratio and the ranking are by KL (golden 1.0x, compressed 0.9x)
    assert document["divergence"] == "kl"
    kl = scipy.special.rel_entr(scipy.special.softmax(ood, 1), scipy.special.softmax(0.9 * ood, 1)).sum(1)
    assert found["n_samples"] == 12 and found["kl_mean_nats"] == pytest.approx(kl.mean())
    assert found["mse_mean"] == pytest.approx(((0.1 * ood) ** 2).mean())
    clean = document["clean"]["kl_mean_nats"]
    assert found["brittleness_ratio"] == pytest.approx(kl.mean() / clean)
    assert [w["sample_index"] for w in found["worst_samples"]] == list(np.argsort(-kl)[:10])


@pytest.mark.parametrize(
    "read, expected",
    [
        (lambda i: ("narrow", {"x": np.zeros((4, 2))}), "could not be compared"),
        (lambda i: (_ for _ in ()).throw(DatasetMismatchError("dataset was deleted")), "was deleted"),
        (lambda i: (_ for _ in ()).throw(MemoryError("9 GiB")), "ran out of memory"),
    ],
)
def test_an_ood_dataset_that_fails_leaves_the_slices(read: Any, expected: str) -> None:
    options = {"slices": ["gaussian_noise"], "severities": [1], "ood_dataset_id": str(uuid.uuid4())}
    document = step(options, read_ood=read)[RESULT_FIDELITY_ROBUSTNESS]
    assert document["error"] is None and [s["name"] for s in document["slices"]] == ["gaussian_noise"]
    assert expected in document["ood"]["error"]


def test_robustness_needs_a_slice_or_an_ood_dataset() -> None:
    base = {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
    with pytest.raises(ValueError, match="at least one slice or an ood_dataset_id"):
        FidelityJobParams.model_validate(base | {"robustness": {"slices": []}})
