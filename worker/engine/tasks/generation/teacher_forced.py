"""A decoder export seen as a plain teacher-forced model, for the language-model task's comparison pass: the
Hugging Face layout's extra inputs are filled in (`position_ids` counted over the attention mask as transformers
does, an empty `past_key_values.*` cache, `use_cache_branch` false) and its `present.*` outputs are left out,
so a dataset of `input_ids` (and `attention_mask`) compares a model exported with a KV cache like any other."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from worker.engine.errors import OutputMismatchError
from worker.engine.tasks.generation.layout import PRESENT_PREFIX, DecoderLayout, decoder_layout
from worker.engine.tasks.generation.plain import empty_past
from worker.engine.types import Runner, TensorSpec


class TeacherForced:
    """`runner` with only input_ids (and attention_mask when the model takes one) as inputs."""

    def __init__(self, runner: Runner, layout: DecoderLayout) -> None:
        self.runner = runner
        self.layout = layout
        keep = {layout.input_ids, layout.attention_mask}
        self._inputs = [spec for spec in runner.inputs if spec.name in keep]
        self._outputs = [spec for spec in runner.outputs if not spec.name.startswith(PRESENT_PREFIX)]

    @property
    def inputs(self) -> list[TensorSpec]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[TensorSpec]:
        return list(self._outputs)

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        layout = self.layout
        ids = np.asarray(feeds[layout.input_ids])
        full: dict[str, np.ndarray] = {layout.input_ids: ids}
        mask = np.ones(ids.shape, dtype=np.int64)
        if layout.attention_mask is not None:
            mask = np.asarray(feeds[layout.attention_mask]).astype(np.int64)
            full[layout.attention_mask] = mask
        if layout.position_ids is not None:
            full[layout.position_ids] = np.where(mask != 0, np.cumsum(mask, axis=1) - 1, 1)
        if layout.use_cache_branch is not None:
            full[layout.use_cache_branch] = np.array([False])
        full.update(empty_past(layout, ids.shape[0]))
        out = self.runner.run(full)
        return {spec.name: out[spec.name] for spec in self._outputs}


def teacher_forced(runner: Runner) -> Runner:
    """The runner itself when it takes nothing a dataset of token ids lacks (or is not a decoder this package
    reads); else its `TeacherForced` view."""
    try:
        layout = decoder_layout(runner.inputs, runner.outputs)
    except (
        OutputMismatchError
    ):  # not a decoder export: the comparison binds its inputs as it does any model's
        return runner
    if layout.position_ids is None and not layout.cache and layout.use_cache_branch is None:
        return runner
    if layout.cache and not layout.cache_startable():
        return runner
    return TeacherForced(runner, layout)


def teacher_forced_arrays(
    inputs: list[TensorSpec], outputs: list[TensorSpec], arrays: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The per-sample arrays a decoder export takes besides the token ids, for a model that is run as it is
    (a sweep's compressible model, not wrapped): `position_ids` counted over the attention mask as
    `TeacherForced` does, and an empty cache (N, ..., 0, ...) per `past_key_values.*` input, which batches slice
    like any array. {} for a model that needs none. A `use_cache_branch` flag is one value for the whole batch,
    not a per-sample array: such a merged export is refused in words."""
    try:
        layout = decoder_layout(inputs, outputs)
    except OutputMismatchError:
        return {}
    ids = np.asarray(arrays[layout.input_ids]) if layout.input_ids in arrays else None
    if ids is None:
        return {}
    if layout.use_cache_branch is not None:
        raise OutputMismatchError(
            f"the model takes {layout.use_cache_branch!r} (a merged decoder's branch switch): a sweep runs the "
            "model on per-sample arrays; export the decoder without the merged cache branch"
        )
    made: dict[str, np.ndarray] = {}
    mask = np.ones(ids.shape, dtype=np.int64)
    if layout.attention_mask is not None and layout.attention_mask in arrays:
        mask = np.asarray(arrays[layout.attention_mask]).astype(np.int64)
    if layout.position_ids is not None and layout.position_ids not in arrays:
        made[layout.position_ids] = np.where(mask != 0, np.cumsum(mask, axis=1) - 1, 1)
    if layout.cache:
        made.update(empty_past(layout, ids.shape[0]))
    return made
