"""What the profile needs from a model, whatever its format: named intermediate tensors of a batch."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal, Protocol

import numpy as np

from worker.engine.errors import DatasetMismatchError

Feeds = Mapping[str, np.ndarray]

INPUT_OP_TYPE = "Input"
"""op_type of a layer that stands for a model input (an ONNX graph input quantized by QDQ nodes)."""


class Side(Protocol):
    """One model, able to capture named intermediate tensors of a batch."""

    family: Literal["onnx", "torch"]

    @property
    def order(self) -> list[str]:
        """Every capturable name, in execution (topological) order."""
        ...

    @property
    def candidates(self) -> list[str]:
        """The names that count as layers (a subset of `order`)."""
        ...

    @property
    def fixed_batch(self) -> int | None:
        """The batch size the model's inputs are fixed to, None when it is dynamic."""
        ...

    def op_type(self, name: str) -> str: ...

    def capture(self, feeds: Feeds, names: Collection[str]) -> dict[str, np.ndarray]: ...


def bind_feeds(feeds: Feeds, names: Sequence[str], role: str) -> dict[str, np.ndarray]:
    """The feeds a model needs: by input name, else by position when the counts agree."""
    if all(name in feeds for name in names):
        return {name: np.asarray(feeds[name]) for name in names}
    if len(feeds) == len(names):
        return {name: np.asarray(value) for name, value in zip(names, feeds.values(), strict=True)}
    raise DatasetMismatchError(
        f"the {role} model expects inputs {list(names)} but the batch has arrays {sorted(feeds)}"
    )


def batch_size_of(feeds: Feeds) -> int:
    """Length of axis 0 of the batch's first array."""
    if not feeds:
        raise DatasetMismatchError("a batch holds no input arrays")
    first = np.asarray(next(iter(feeds.values())))
    if first.ndim == 0:
        raise DatasetMismatchError("input arrays need a batch dimension (axis 0)")
    return int(first.shape[0])


def stops_the_job(exc: BaseException) -> bool:
    """Whether `exc`, or one it was raised from, must stop the job rather than be recorded as a layer's
    missing value: a cancellation, or the task's soft time limit (celery's SoftTimeLimitExceeded, an
    Exception subclass raised wherever Python happens to be, recognised by name because the engine does
    not import the service)."""
    from worker.engine.errors import JobCancelled

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, JobCancelled) or type(seen).__name__ == "SoftTimeLimitExceeded":
            return True
        seen = seen.__cause__
    return False
