"""Binding a dataset to the models' inputs, running them batch by batch, and pairing their outputs.

Part of the fidelity comparison (`worker.engine.fidelity.compare.compare_models`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from worker.engine.errors import DatasetMismatchError, EngineError, OutputMismatchError
from worker.engine.fidelity.params import LABELS_KEY
from worker.engine.tasks.detection import GT_BOXES_KEY, GT_LABELS_KEY
from worker.engine.tasks.image_output import TARGETS_KEY
from worker.engine.types import Dim, Runner, TensorSpec


def format_shape(shape: Sequence[Dim]) -> str:
    """A shape as users read it: ``(batch, 1, 8, 8)``; unknown dimensions print as ``?``."""
    parts = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def bind_inputs(arrays: Mapping[str, np.ndarray], specs: list[TensorSpec]) -> dict[str, np.ndarray]:
    """Match dataset arrays to a model's inputs; returns ``{input name: array}``.

    Arrays are taken by input name; a single-input model also accepts a single array of any name. The
    annotation arrays ("labels", "targets", "gt_boxes", "gt_labels") are ignored. Every array must have the same length (the batch dimension, first), the
    same rank as its spec, and the spec's fixed sizes in every other dimension; a fixed batch size in the
    spec is not checked here (the runner is then called in chunks of that size). An array is cast to the
    spec's dtype when that is a same-kind cast (e.g. float64 → float32, uint8 → float32, int64 → int32
    when the values fit). Anything else raises DatasetMismatchError.
    """
    annotations = (LABELS_KEY, TARGETS_KEY, GT_BOXES_KEY, GT_LABELS_KEY)
    candidates = {k: np.asarray(v) for k, v in arrays.items() if k not in annotations}
    names = [s.name for s in specs]
    if all(n in candidates for n in names):
        chosen = {s.name: candidates[s.name] for s in specs}
    elif len(specs) == 1 and len(candidates) == 1:
        chosen = {specs[0].name: next(iter(candidates.values()))}
    else:
        raise DatasetMismatchError(
            f"the model expects inputs {names} but the dataset has arrays {sorted(candidates)}; "
            "name the dataset arrays after the model inputs"
        )
    _check_lengths(chosen)
    return {s.name: _fit_to_spec(chosen[s.name], s) for s in specs}


def _check_lengths(arrays: Mapping[str, np.ndarray]) -> int:
    lengths: dict[str, int] = {}
    for name, arr in arrays.items():
        if arr.ndim == 0:
            raise DatasetMismatchError(f"dataset array '{name}' is a scalar; it needs a batch dimension")
        lengths[name] = int(arr.shape[0])
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"'{k}' has {v}" for k, v in lengths.items())
        raise DatasetMismatchError(f"dataset arrays have different lengths: {listed}")
    return next(iter(lengths.values()), 0)


def _fit_to_spec(arr: np.ndarray, spec: TensorSpec) -> np.ndarray:
    if spec.shape:  # an empty spec shape is taken as "rank unknown": nothing to check
        expected = spec.shape[1:]
        given = arr.shape[1:]
        fits = len(expected) == len(given) and all(
            not isinstance(e, int) or e == g for e, g in zip(expected, given, strict=True)
        )
        if not fits:
            raise DatasetMismatchError(
                f"input '{spec.name}' expects shape {format_shape(spec.shape)} "
                f"but the dataset gives {format_shape(arr.shape)}"
            )
    return _cast(arr, spec)


def _cast(arr: np.ndarray, spec: TensorSpec) -> np.ndarray:
    try:
        target = np.dtype(spec.dtype)
    except TypeError:
        return arr  # a dtype numpy does not know (e.g. bfloat16): leave it to the runner
    if arr.dtype == target:
        return arr
    ok = np.can_cast(arr.dtype, target, casting="same_kind")
    if ok and target.kind in "iu" and arr.dtype.kind in "iu" and arr.size:
        info = np.iinfo(target)
        ok = bool(arr.min() >= info.min and arr.max() <= info.max)
    if not ok:
        raise DatasetMismatchError(
            f"input '{spec.name}' expects dtype {target.name} but the dataset gives {arr.dtype.name}, "
            "which cannot be converted safely"
        )
    return arr.astype(target, copy=False)


def _bind_compressed(
    arrays: Mapping[str, np.ndarray],
    golden_specs: list[TensorSpec],
    golden_feeds: dict[str, np.ndarray],
    specs: list[TensorSpec],
    notes: list[str],
) -> dict[str, np.ndarray]:
    """Bind the compressed model's inputs: by name, else by position when the counts agree."""
    try:
        return bind_inputs(arrays, specs)
    except DatasetMismatchError:
        if len(specs) != len(golden_specs) or {s.name for s in specs} == {s.name for s in golden_specs}:
            raise
    by_position = {c.name: golden_feeds[g.name] for g, c in zip(golden_specs, specs, strict=True)}
    notes.append(
        f"input names differ (golden: {[s.name for s in golden_specs]}, compressed: {[s.name for s in specs]}); "
        "inputs matched by position"
    )
    return bind_inputs(by_position, specs)


def _resolve_labels(labels: np.ndarray | None, arrays: Mapping[str, np.ndarray], n: int) -> np.ndarray | None:
    """Labels as int64 of length n (from the argument, else the dataset's "labels" array), or None."""
    raw = labels if labels is not None else arrays.get(LABELS_KEY)
    if raw is None:
        return None
    lab = np.asarray(raw)
    if lab.ndim == 2 and lab.shape[1] == 1:
        lab = lab[:, 0]
    if lab.ndim != 1 or lab.shape[0] != n:
        raise DatasetMismatchError(
            f"labels must be one class index per sample, shape ({n},), but have shape {format_shape(lab.shape)}"
        )
    if lab.dtype.kind == "f" and not np.all(np.isfinite(lab) & (lab == np.round(lab))):
        raise DatasetMismatchError("labels must be integer class indices")
    if lab.dtype.kind not in "iuf":
        raise DatasetMismatchError(f"labels must be integer class indices, not {lab.dtype.name}")
    return lab.astype(np.int64)


def _fixed_batch(specs: list[TensorSpec]) -> int | None:
    for s in specs:
        if s.shape and isinstance(s.shape[0], int) and s.shape[0] > 0:
            return int(s.shape[0])
    return None


def _run_batch(runner: Runner, feeds: dict[str, np.ndarray], n: int, role: str) -> dict[str, np.ndarray]:
    """Run one batch of n samples, in padded chunks when the runner's batch size is fixed."""
    fixed = _fixed_batch(runner.inputs)
    if fixed is None or fixed == n:
        return _checked(runner.run(feeds), runner, n, role)
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, n, fixed):
        idx = np.minimum(np.arange(start, start + fixed), n - 1)  # pads by repeating the last sample
        out = _checked(runner.run({k: v[idx] for k, v in feeds.items()}), runner, fixed, role)
        keep = min(fixed, n - start)
        parts.append({k: v[:keep] for k, v in out.items()})
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _checked(out: Mapping[str, np.ndarray], runner: Runner, n: int, role: str) -> dict[str, np.ndarray]:
    result: dict[str, np.ndarray] = {}
    for spec in runner.outputs:
        if spec.name not in out:
            raise EngineError(
                f"the {role} model returned outputs {sorted(out)} but declares {[s.name for s in runner.outputs]}"
            )
        arr = np.asarray(out[spec.name])
        if arr.ndim == 0 or arr.shape[0] != n:
            raise EngineError(
                f"the {role} model's output '{spec.name}' has shape {format_shape(arr.shape)} "
                f"for a batch of {n} samples; outputs must be batch first"
            )
        result[spec.name] = arr
    return result


def _match_outputs(
    golden: list[TensorSpec], compressed: list[TensorSpec]
) -> tuple[list[tuple[str, str]], Literal["name", "position"]]:
    """Pairs (golden name, compressed name): by name when the name sets agree, else by position."""
    g_names, c_names = [s.name for s in golden], [s.name for s in compressed]
    how: Literal["name", "position"]
    if set(g_names) == set(c_names) and len(g_names) == len(c_names):
        pairs, how = [(n, n) for n in g_names], "name"
    elif len(g_names) == len(c_names):
        pairs, how = list(zip(g_names, c_names, strict=True)), "position"
    else:
        raise OutputMismatchError(
            f"the golden model has outputs {g_names} and the compressed model has {c_names}; "
            "they need the same names or at least the same number of outputs"
        )
    g_specs, c_specs = {s.name: s for s in golden}, {s.name: s for s in compressed}
    for g, c in pairs:
        _check_static_shapes(g_specs[g], c_specs[c])
    return pairs, how


def _check_static_shapes(g: TensorSpec, c: TensorSpec) -> None:
    if not g.shape or not c.shape:
        return
    gs, cs = g.shape[1:], c.shape[1:]
    clash = len(gs) != len(cs) or any(
        isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(gs, cs, strict=True)
    )
    if clash:
        raise OutputMismatchError(
            f"golden output '{g.name}' has shape {format_shape(g.shape)} but compressed output "
            f"'{c.name}' has {format_shape(c.shape)}"
        )


def _dataset_length(arrays: Mapping[str, np.ndarray]) -> int:
    return _check_lengths({k: np.asarray(v) for k, v in arrays.items()}) if arrays else 0
