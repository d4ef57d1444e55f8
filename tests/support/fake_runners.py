"""Tiny numpy-backed fake runners for the fidelity engine's tests: a linear model x @ W + bias with an
optional output transform (LinearRunner), a two-input two-output one (MultiRunner), the reference outputs
of one call over the whole dataset, and the checks the tests share."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from worker.engine.fidelity.compare import FidelityReport
from worker.engine.types import Runner, TensorSpec

N, D, C = 360, 12, 10  # samples, features, classes


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
