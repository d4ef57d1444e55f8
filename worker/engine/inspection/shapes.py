"""The concrete input shapes MACs are counted at: given ones checked, else the declared ones with batch 1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worker.engine.errors import EngineError
from worker.engine.types import TensorSpec


def resolve_input_shapes(
    inputs: Sequence[TensorSpec], given: Mapping[str, Sequence[int]] | None
) -> tuple[dict[str, list[int]] | None, list[str]]:
    """Concrete shapes for every input, or None (with notes saying which input lacks one)."""
    given = dict(given or {})
    unknown_names = sorted(set(given) - {spec.name for spec in inputs})
    if unknown_names:
        raise EngineError(
            f"input_shapes names {unknown_names}, which are not inputs of the model "
            f"({[spec.name for spec in inputs]})."
        )
    shapes: dict[str, list[int]] = {}
    notes: list[str] = []
    for spec in inputs:
        if spec.name in given:
            shapes[spec.name] = _checked_given_shape(spec, given[spec.name])
            continue
        shape, note = _declared_shape(spec)
        if shape is None:
            notes.append(note)
        else:
            shapes[spec.name] = shape
    if len(shapes) < len(inputs):
        return None, notes
    batches = {shape[0] for shape in shapes.values() if shape}
    if batches - {1}:
        notes.append(f"MACs and FLOPs are for a batch of {sorted(batches)} samples, not one sample.")
    return shapes, notes


def _checked_given_shape(spec: TensorSpec, shape: Sequence[int]) -> list[int]:
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise EngineError(f"input_shapes[{spec.name!r}] = {dims} has a negative size.")
    if spec.shape and len(spec.shape) != len(dims):
        raise EngineError(
            f"input_shapes[{spec.name!r}] = {dims} has rank {len(dims)}, but the model declares "
            f"{list(spec.shape)} (rank {len(spec.shape)})."
        )
    for declared, wanted in zip(spec.shape, dims, strict=False):
        if isinstance(declared, int) and declared != wanted:
            raise EngineError(
                f"input_shapes[{spec.name!r}] = {dims} contradicts the declared shape {list(spec.shape)}."
            )
    return dims


def _declared_shape(spec: TensorSpec) -> tuple[list[int] | None, str]:
    if not spec.shape:
        return None, (
            f"Input {spec.name!r} has no declared shape (rank unknown); declare it "
            f"(input_shapes) to get MACs/FLOPs."
        )
    dims = [d if isinstance(d, int) else (1 if axis == 0 else None) for axis, d in enumerate(spec.shape)]
    if any(d is None for d in dims):
        unknown = [axis for axis, d in enumerate(dims) if d is None]
        return None, (
            f"Input {spec.name!r} has unknown sizes on axes {unknown} of {list(spec.shape)}; declare its "
            f"shape (input_shapes) to get MACs/FLOPs."
        )
    return [int(d) for d in dims if d is not None], ""
