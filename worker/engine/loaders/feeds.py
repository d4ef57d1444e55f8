"""Check a runner's feeds against its input specs: names, ranks, fixed sizes and safe casts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from worker.engine.errors import DatasetMismatchError
from worker.engine.types import TensorSpec


def check_feeds(
    feeds: Mapping[str, np.ndarray], inputs: Sequence[TensorSpec], *, cast: bool = True
) -> list[np.ndarray]:
    """Return the arrays in input order, cast within their kind (float64 -> float32) where needed.

    Raises DatasetMismatchError for missing or unknown names, a wrong rank, a fixed dim that differs,
    or a dtype that cannot be cast safely within its kind (e.g. float -> int).
    """
    names = [spec.name for spec in inputs]
    missing = [name for name in names if name not in feeds]
    unknown = [name for name in feeds if name not in names]
    if missing or unknown:
        raise DatasetMismatchError(
            f"The model's inputs are {names}; missing: {missing or 'none'}, unexpected: {unknown or 'none'}."
        )
    return [_fit_array(np.asarray(feeds[spec.name]), spec, cast) for spec in inputs]


def _fit_array(array: np.ndarray, spec: TensorSpec, cast: bool) -> np.ndarray:
    if spec.shape and array.ndim != len(spec.shape):
        raise DatasetMismatchError(
            f"Input {spec.name!r} expects rank {len(spec.shape)} {list(spec.shape)}, got shape {list(array.shape)}."
        )
    for axis, (want, got) in enumerate(zip(spec.shape, array.shape, strict=False)):
        if isinstance(want, int) and want != got:
            raise DatasetMismatchError(
                f"Input {spec.name!r} expects size {want} on axis {axis} {list(spec.shape)}, "
                f"got shape {list(array.shape)}."
            )
    if not cast:
        return array
    try:
        wanted = np.dtype(spec.dtype)
    except TypeError:  # a dtype numpy does not know (bfloat16): leave the array as it is
        return array
    if array.dtype == wanted:
        return array
    if not np.can_cast(array.dtype, wanted, casting="same_kind"):
        raise DatasetMismatchError(f"Input {spec.name!r} expects {spec.dtype}, got {array.dtype}.")
    return array.astype(wanted)
