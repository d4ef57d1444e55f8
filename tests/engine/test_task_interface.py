"""The task-adapter hook of the fidelity comparison: an adapter sees every batch of both models' outputs
with the dataset, its per-sample values are gathered in sample order, and its block becomes the `task` of
its primary output. A tiny adapter registered for the test (argmax agreement counted by hand) stands in for
the real ones."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from worker.engine.errors import OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.tasks import interface
from worker.engine.tasks.interface import TaskContext
from worker.engine.types import TensorSpec


class _Agreement:
    name = "test-agreement"

    def __init__(self) -> None:
        self.primary_output = ""
        self.batches: list[tuple[int, int]] = []
        self.same = 0
        self.n = 0

    def start(self, context: TaskContext) -> None:
        wanted = context.options.get("output", "logits")
        if wanted not in context.output_shapes:
            raise OutputMismatchError(f"no output {wanted!r}")
        self.primary_output = wanted
        self.marks = np.asarray(context.dataset["marks"])

    def update(
        self, golden: Mapping[str, Any], compressed: Mapping[str, Any], start: int, stop: int
    ) -> Mapping[str, Any]:
        self.batches.append((start, stop))
        same = golden[self.primary_output].argmax(1) == compressed[self.primary_output].argmax(1)
        self.same += int(same.sum())
        self.n += len(same)
        return {"same": same, "mark": self.marks[start:stop]}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "agreement": self.same / self.n}


class _Linear:
    def __init__(self, w: np.ndarray) -> None:
        self.w = w
        self.inputs = [TensorSpec("x", ("batch", 6), "float32")]
        self.outputs = [TensorSpec("logits", ("batch", 4), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"logits": feeds["x"] @ self.w}


@pytest.fixture
def agreement() -> Iterator[list[_Agreement]]:
    made: list[_Agreement] = []

    def factory() -> _Agreement:
        made.append(_Agreement())
        return made[-1]

    interface.adapter_tasks()  # the real adapters first, so the test's can be removed alone
    interface.register("test-agreement", factory)
    try:
        yield made
    finally:
        del interface._REGISTRY["test-agreement"]


def test_adapter_sees_every_batch_and_its_block_lands_on_its_output(agreement: list[_Agreement]) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 4)).astype(np.float32)
    noisy = (w + 0.8 * rng.standard_normal(w.shape)).astype(np.float32)
    x = rng.standard_normal((23, 6)).astype(np.float32)
    marks = np.arange(23) * 10
    params = FidelityParams(batch_size=5, task="test-agreement", task_options={"output": "logits"})
    report = compare_models(_Linear(w), _Linear(noisy), {"x": x, "marks": marks}, None, params)
    (adapter,) = agreement
    assert adapter.batches == [(0, 5), (5, 10), (10, 15), (15, 20), (20, 23)]
    expected = (x @ w).argmax(1) == (x @ noisy).argmax(1)
    assert report.outputs["logits"]["task"] == {"name": "test-agreement", "agreement": expected.mean()}
    assert np.array_equal(report.task_per_sample["same"], expected)
    assert np.array_equal(report.task_per_sample["mark"], marks)
    assert 0 < expected.mean() < 1  # the noisy copy disagrees on some samples: the check can fail


def test_an_adapter_refusing_the_outputs_stops_the_job_saying_why(agreement: list[_Agreement]) -> None:
    x = np.ones((4, 6), np.float32)
    params = FidelityParams(task="test-agreement", task_options={"output": "boxes"})
    with pytest.raises(OutputMismatchError, match="no output 'boxes'"):
        compare_models(_Linear(np.eye(6, 4, dtype=np.float32)), _Linear(np.eye(6, 4, dtype=np.float32)),
                       {"x": x, "marks": np.zeros(4)}, None, params)  # fmt: skip


def test_unknown_tasks_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown task 'nonsense'"):
        FidelityParams(task="nonsense")
