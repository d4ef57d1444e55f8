"""The fidelity job's robustness step (worker/robustness_step.py): the contract's slice names are the
engine's; a cancellation and the soft time limit go through the step (even wrapped by the engine), other
failures become the document's error; a job without the option gets no document."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any, get_args

import numpy as np
import pytest
from celery.exceptions import SoftTimeLimitExceeded

from backend.contracts import RESULT_FIDELITY_ROBUSTNESS, FidelityJobParams
from backend.robustness_contracts import ROBUSTNESS_SLICES, RobustnessSlice
from worker.engine.errors import EngineError, JobCancelled
from worker.engine.fidelity import FidelityParams, compare_models
from worker.engine.robustness import SEVERITIES, SLICES
from worker.engine.types import TensorSpec
from worker.robustness_step import robustness_results


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


def step(robustness: dict[str, Any] | None, progress: Any = None) -> dict[str, Any]:
    x = np.random.default_rng(0).normal(size=(20, 3))
    runners = [Scaled(1.0), Scaled(0.9)]
    report = compare_models(runners[0], runners[1], {"x": x}, None, FidelityParams(batch_size=8))
    params = FidelityJobParams.model_validate(
        {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
        | {"robustness": robustness}
    )
    ctx = SimpleNamespace(progress=progress or (lambda fraction, message: None))
    return robustness_results(ctx, params, runners, {"x": x}, None, report, 1.0)  # type: ignore[arg-type]


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
