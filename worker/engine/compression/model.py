"""The model handle every compression function works on, and what it shares between backends.

`CompressibleModel` is a golden model that can lend out compressed variants of itself: `session()`
writes new tensor values and output transforms into a working copy, yields a `Runner`, and restores
the golden state afterwards (torch) or builds a separate session (ONNX), so the golden model is never
changed and every evaluation starts from the same golden state (which makes chunks of a sensitivity
scan reproduce a single run exactly).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from worker.engine.compression import ops
from worker.engine.compression.configs import Config, needs_activation_stats
from worker.engine.compression.layers import (
    CompressionOutcome,
    LayerSpec,
    compress_tensors,
    output_transforms,
)
from worker.engine.errors import DatasetMismatchError, EngineError
from worker.engine.types import Runner, TensorSpec

Feeds = Mapping[str, np.ndarray]
Chains = dict[str, dict[str, list[tuple[str, Any]]]]
"""layer name → output key → chain of output transforms (see layers.output_transforms)."""


class UnknownLayerError(EngineError):
    """A layer name that is not one of the model's compressible layers."""


def dataset_length(feeds: Feeds) -> int:
    lengths = {name: len(np.asarray(array)) for name, array in feeds.items()}
    if not lengths:
        raise DatasetMismatchError("the calibration set has no arrays")
    if len(set(lengths.values())) != 1:
        raise DatasetMismatchError(f"calibration arrays differ in length: {lengths}")
    n = next(iter(lengths.values()))
    if n == 0:
        raise DatasetMismatchError("the calibration set has no samples")
    return n


def batches(feeds: Feeds, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
    n = dataset_length(feeds)
    for start in range(0, n, batch_size):
        yield {name: np.asarray(array)[start : start + batch_size] for name, array in feeds.items()}


def first_sample(feeds: Feeds) -> dict[str, np.ndarray]:
    return {name: np.asarray(array)[:1] for name, array in feeds.items()}


class CompressibleModel(ABC):
    """A golden model whose compressible layers can be compressed one by one or all together."""

    backend: str = ""
    notes: list[str]
    largest_activation_bytes: int | None = None
    """Bytes of the largest tensor one sample writes, learnt by `prepare` (None: unknown, e.g. torch
    models); the sensitivity scan sizes its batches by it."""

    @property
    @abstractmethod
    def inputs(self) -> list[TensorSpec]: ...

    @property
    @abstractmethod
    def outputs(self) -> list[TensorSpec]: ...

    @abstractmethod
    def prepare(self, sample: Feeds) -> None:
        """Learn what needs a run (depth order, output keys, MACs) from one sample; idempotent."""

    @abstractmethod
    def layers(self) -> list[LayerSpec]:
        """Compressible layers in depth order (call `prepare` first for the order of execution)."""

    @abstractmethod
    def read(self, key: str) -> torch.Tensor:
        """The golden value of a tensor (a copy, float32)."""

    @abstractmethod
    def output_keys(self, layer: str) -> list[str]:
        """Keys of the layer's float outputs, as used by `collect_stats` and `session`."""

    @abstractmethod
    def run(self, feeds: Feeds) -> dict[str, np.ndarray]:
        """Run the golden model on one batch."""

    @abstractmethod
    def collect_stats(
        self, layers: Sequence[str], feeds: Feeds, batch_size: int, histogram: bool
    ) -> dict[tuple[str, str], ops.ActivationStats]:
        """Golden activation statistics of the layers' outputs over the calibration set."""

    @abstractmethod
    @contextmanager
    def session(self, tensors: Mapping[str, torch.Tensor], chains: Chains) -> Iterator[Runner]:
        """A runner of the model with `tensors` replaced and `chains` applied to layer outputs."""

    @abstractmethod
    def weights_digest(self) -> str:
        """A hash of the golden weights: tells whether two results were computed on the same model."""

    # -------------------------------------------------------------------------------- shared logic

    def layer(self, name: str) -> LayerSpec:
        for layer in self.layers():
            if layer.name == name:
                return layer
        raise UnknownLayerError(
            f"{name!r} is not a compressible layer of this model; its compressible layers are "
            f"{[layer.name for layer in self.layers()]}"
        )

    def check_layers(self, names: Sequence[str]) -> None:
        for name in names:
            self.layer(name)


class Calibration:
    """Golden activation statistics over a calibration set, computed on demand and cached per layer."""

    def __init__(self, model: CompressibleModel, feeds: Feeds, batch_size: int = 64) -> None:
        self.model = model
        self.feeds = feeds
        self.batch_size = batch_size
        self._stats: dict[tuple[str, str], ops.ActivationStats] = {}
        self._histogram: set[str] = set()
        self._ranged: set[str] = set()
        self._importance: dict[tuple[str, str], list[float]] = {}

    def ensure(self, layers: Sequence[str], histogram: bool) -> None:
        wanted = [name for name in layers if name not in (self._histogram if histogram else self._ranged)]
        if not wanted:
            return
        stats = self.model.collect_stats(wanted, self.feeds, self.batch_size, histogram)
        self._stats.update(stats)
        self._ranged.update(wanted)
        if histogram:
            self._histogram.update(wanted)

    def ensure_for(self, plan: Mapping[str, Config]) -> None:
        need = {name: needs_activation_stats(config) for name, config in plan.items()}
        self.ensure([n for n, kind in need.items() if kind == "minmax"], histogram=False)
        self.ensure(
            [n for n, kind in need.items() if kind in ("percentile", "mse", "entropy")], histogram=True
        )

    def importance(self, layer: str, method: str) -> list[float]:
        """Importance of the layer's output channels on the calibration feeds (cached per layer and method)."""
        from worker.engine.compression.importance import channel_importance

        key = (layer, method)
        if key not in self._importance:
            found = channel_importance(
                self.model,
                layer,
                method,  # type: ignore[arg-type]
                self.feeds,
                batch_size=self.batch_size,
            )
            self._importance[key] = [float(s) for s in found.scores]
        return self._importance[key]

    def stats(self, layer: str, key: str) -> ops.ActivationStats:
        found = self._stats.get((layer, key))
        if found is None:
            raise EngineError(f"no calibration statistics for output {key!r} of layer {layer!r}")
        return found


def resolve(
    model: CompressibleModel,
    plan: Mapping[str, Config],
    calibration: Calibration | None,
    cache: dict[Any, Any] | None = None,
) -> tuple[CompressionOutcome, Chains]:
    """New tensor values and output chains of a plan (layer name → config); see compress_tensors
    for `cache`."""
    model.check_layers(list(plan))
    if calibration is not None:
        calibration.ensure_for(plan)
    outcome = compress_tensors(
        model.layers(), plan, model.read, cache, importance_scores(model, plan, calibration)
    )
    chains: Chains = {}
    lookup = calibration.stats if calibration is not None else None
    for name, config in plan.items():
        layer = model.layer(name)
        keys = model.output_keys(name)
        if needs_activation_stats(config) or any(
            getattr(stage, "type", "") == "float_cast" for stage in getattr(config, "stages", (config,))
        ):
            if not keys:
                outcome.notes.append(
                    f"{name}: its outputs were never seen during a run; output transforms of {config.id} not applied"
                )
            chain = output_transforms(layer, config, keys, lookup)
            if chain:
                chains[name] = chain
    return outcome, chains


def importance_scores(
    model: CompressibleModel, plan: Mapping[str, Config], calibration: Calibration | None
) -> dict[tuple[str, str], list[float]]:
    """Channel importance on the calibration data for the ChannelPrune stages that rank by it."""
    from worker.engine.compression.configs import DATA_NORMS, ChannelPrune, stages_of

    wanted = {
        (name, stage.norm)
        for name, config in plan.items()
        for stage in stages_of(config)
        if isinstance(stage, ChannelPrune) and stage.norm in DATA_NORMS
    }
    if not wanted:
        return {}
    if calibration is None:
        raise EngineError(
            f"channel pruning by {sorted({m for _, m in wanted})} importance needs calibration data"
        )
    return {key: calibration.importance(*key) for key in sorted(wanted)}


@contextmanager
def compressed(
    model: CompressibleModel,
    plan: Mapping[str, Config],
    calibration: Calibration | None = None,
    cache: dict[Any, Any] | None = None,
) -> Iterator[tuple[Runner, CompressionOutcome]]:
    """A runner of the model compressed by `plan`, and what the plan changed."""
    outcome, chains = resolve(model, plan, calibration, cache)
    with model.session(outcome.tensors, chains) as runner:
        yield runner, outcome


def digest_arrays(arrays: Sequence[np.ndarray]) -> str:
    h = hashlib.sha256()
    for array in arrays:
        a = np.ascontiguousarray(array)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]
