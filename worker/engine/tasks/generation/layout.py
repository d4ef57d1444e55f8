"""Which inputs and outputs of a causal LM do what, read from its declared inputs and outputs (pure; no runtime).

The layout is the Hugging Face exporters' (optimum, transformers.onnx): `input_ids` (batch, sequence),
`attention_mask` (batch, past + sequence) and `position_ids` (batch, sequence), both optional; the KV cache as
`past_key_values.<i>.key|value` inputs (batch, heads, past sequence, head size) paired with
`present.<i>.key|value` outputs (the same plus the new positions); `logits` (batch, sequence, V). A merged
decoder's `use_cache_branch` (a bool) is fed too. Any other input is refused: the loop could not fill it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from worker.engine.errors import OutputMismatchError
from worker.engine.types import Dim, TensorSpec

INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
POSITION_IDS = "position_ids"
USE_CACHE_BRANCH = "use_cache_branch"
PAST_PREFIX = "past_key_values"
PRESENT_PREFIX = "present"


@dataclass(frozen=True)
class CacheSlot:
    """One cached tensor: the input that takes the past, the output that gives it back one step longer."""

    past: str
    present: str
    shape: tuple[Dim, ...]
    dtype: str
    sequence_axis: int

    def empty_shape(self, batch: int) -> tuple[int, ...] | None:
        """The shape of an empty past for `batch` rows, or None when a size other than batch and sequence is
        not fixed in the declaration (the cache cannot be started then)."""
        shape: list[int] = []
        for axis, dim in enumerate(self.shape):
            if axis == 0:
                shape.append(batch)
            elif axis == self.sequence_axis:
                shape.append(0)
            elif isinstance(dim, int) and not isinstance(dim, bool):
                shape.append(dim)
            else:
                return None
        return tuple(shape)


@dataclass(frozen=True)
class DecoderLayout:
    input_ids: str
    logits: str
    attention_mask: str | None
    position_ids: str | None
    use_cache_branch: str | None
    cache: tuple[CacheSlot, ...]
    fixed_length: int | None
    """The sequence length when the model's `input_ids` declares a fixed one (its whole context)."""

    @property
    def has_cache(self) -> bool:
        return bool(self.cache)

    def cache_startable(self) -> bool:
        return all(slot.empty_shape(1) is not None for slot in self.cache)


def _is_fixed(dim: Dim) -> bool:
    return isinstance(dim, int) and not isinstance(dim, bool)


def _sequence_axis(shape: tuple[Dim, ...]) -> int:
    """The axis of the past sequence: the one symbolic size after the batch, or the Hugging Face layout's
    (batch, heads, sequence, head size) third axis when that is ambiguous."""
    symbolic = [axis for axis, dim in enumerate(shape) if axis > 0 and not _is_fixed(dim)]
    if len(symbolic) == 1:
        return symbolic[0]
    return len(shape) - 2 if len(shape) >= 3 else len(shape) - 1


def logits_output(outputs: Sequence[TensorSpec], wanted: str | None = None) -> str:
    """The output of next-token logits: `wanted`, else "logits", else the first output of rank 3."""
    names = [o.name for o in outputs]
    if wanted is not None:
        if wanted not in names:
            raise OutputMismatchError(f"the model has no output {wanted!r} (outputs: {', '.join(names)})")
        return wanted
    if "logits" in names:
        return "logits"
    ranked = [o.name for o in outputs if len(o.shape) == 3 and not o.name.startswith(PRESENT_PREFIX)]
    if not ranked:
        raise OutputMismatchError(
            f"generation needs an output of next-token logits (batch, sequence, V); the model's outputs: "
            f"{', '.join(names)}"
        )
    return ranked[0]


def decoder_layout(
    inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec], logits: str | None = None
) -> DecoderLayout:
    """Read the layout from a runner's declared inputs and outputs; raises OutputMismatchError with the names
    when the model is not a decoder the generation loop can drive."""
    by_name = {spec.name: spec for spec in inputs}
    output_names = {spec.name for spec in outputs}
    if INPUT_IDS not in by_name:
        raise OutputMismatchError(
            f"generation feeds token ids to an input named {INPUT_IDS!r}; the model's inputs are "
            f"{', '.join(by_name) or 'none'}"
        )
    cache: list[CacheSlot] = []
    for name, spec in by_name.items():
        if not name.startswith(PAST_PREFIX):
            continue
        present = PRESENT_PREFIX + name[len(PAST_PREFIX) :]
        if present not in output_names:
            raise OutputMismatchError(
                f"the model takes the cache input {name!r} but gives no output {present!r} to feed it back"
            )
        cache.append(CacheSlot(name, present, spec.shape, spec.dtype, _sequence_axis(spec.shape)))
    known = {INPUT_IDS, ATTENTION_MASK, POSITION_IDS, USE_CACHE_BRANCH} | {slot.past for slot in cache}
    other = [name for name in by_name if name not in known]
    if other:
        raise OutputMismatchError(
            f"generation cannot fill the model input(s) {', '.join(map(repr, other))}: it feeds input_ids, "
            "attention_mask, position_ids and past_key_values.* only"
        )
    ids_shape = by_name[INPUT_IDS].shape
    fixed = ids_shape[1] if len(ids_shape) == 2 and _is_fixed(ids_shape[1]) else None
    return DecoderLayout(
        input_ids=INPUT_IDS,
        logits=logits_output(outputs, logits),
        attention_mask=ATTENTION_MASK if ATTENTION_MASK in by_name else None,
        position_ids=POSITION_IDS if POSITION_IDS in by_name else None,
        use_cache_branch=USE_CACHE_BRANCH if USE_CACHE_BRANCH in by_name else None,
        cache=tuple(cache),
        fixed_length=fixed if isinstance(fixed, int) else None,
    )
