"""Layer-wise sensitivity, compression schedules and mixed-precision plans (the engine of a sensitivity job).

`layer_sensitivity` compresses each compressible layer alone ("only") or every layer but one
("all_but") with each config, runs the calibration set and measures the primary output against the
golden one (`compression.divergence`: KL(P‖Q) mean in nats, top-1 agreement, SQNR in dB, MSE).

Speed: for ONNX models the "only" cells re-run just the part of the graph downstream of their layer,
from golden activations computed once per group of layers (`sensitivity_suffix`, `suffix_onnx`), with
the same numbers as re-running the whole model (`reuse_prefix=False`, kept for tests and benchmarks).

Chunks: a job may split the layers over workers, `layer_sensitivity(..., layers=chunk)` each, and
`merge_sensitivity` joins the results. Every chunk sees the whole model (layer metadata, depth order,
golden outputs and activation ranges are computed from the full model and the same calibration set,
and every evaluation starts from the untouched golden weights), so merged chunks equal one full run
exactly; merging checks that the chunks agree on model, data, configs and mode.

Ranking (most sensitive first): each cell scores KL mean for classifiers, else −SQNR dB (a non-finite
compressed output scores +inf). Per config, layers are sorted by that score; overall, by the mean score
over configs (ties: larger maximum, then depth order).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from worker.engine.compression import as_compressible
from worker.engine.compression.configs import Config, config_from_dict, weight_bits
from worker.engine.compression.divergence import Divergence, Golden, golden_outputs, measure
from worker.engine.compression.importance import ChannelImportance, ImportanceMethod, channel_importance
from worker.engine.compression.layers import CompressionOutcome
from worker.engine.compression.mixed_precision import InfeasibleBudgetError
from worker.engine.compression.model import Calibration, CompressibleModel, Feeds, compressed, first_sample
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.errors import EngineError
from worker.engine.sensitivity_plans import (
    MixedPrecisionPlan,
    PlanMeasurement,
    ScheduleStage,
    compression_schedule,
    measure_plan,
    plan_mixed_precision,
)
from worker.engine.sensitivity_suffix import only_cells_from_suffix

__all__ = [
    "ChannelImportance",
    "InfeasibleBudgetError",
    "MixedPrecisionPlan",
    "PlanMeasurement",
    "ScheduleStage",
    "SensitivityCell",
    "SensitivityMergeError",
    "SensitivityResult",
    "channel_importance",
    "compression_schedule",
    "importance",
    "layer_sensitivity",
    "measure_plan",
    "merge_sensitivity",
    "plan_mixed_precision",
]

Mode = Literal["only", "all_but"]
Progress = Callable[[int, int], None]


class SensitivityMergeError(EngineError):
    """Chunk results that do not belong to the same scan."""


@dataclass(frozen=True)
class SensitivityCell:
    """One layer × config measurement."""

    layer: str
    config: str
    divergence: Divergence
    compressed: list[str]
    """Tensors the plan actually changed (names), over all layers it compressed."""
    affected_layers: list[str]
    """Layers other than the compressed ones whose tensors changed too (shared weights)."""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "config": self.config,
            **self.divergence.to_dict(),
            "compressed": list(self.compressed),
            "affected_layers": list(self.affected_layers),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SensitivityCell:
        return cls(
            layer=data["layer"],
            config=data["config"],
            divergence=Divergence.from_dict(data),
            compressed=list(data["compressed"]),
            affected_layers=list(data["affected_layers"]),
            notes=list(data["notes"]),
        )


@dataclass
class SensitivityResult:
    """A layer × config sensitivity matrix (possibly a chunk of layers)."""

    mode: Mode
    configs: list[Config]
    layers: list[dict[str, Any]]
    """Metadata of every compressible layer of the model, in depth order (see LayerSpec.to_dict)."""
    cells: dict[tuple[str, str], SensitivityCell]
    primary_output: str
    output_kind: str
    n_samples: int
    model: dict[str, str]
    """backend, weights_digest, golden_digest: what merging checks."""
    whole_model: dict[str, Divergence] = field(default_factory=dict)
    """Per config id: every layer compressed at once (when requested)."""
    notes: list[str] = field(default_factory=list)

    @property
    def config_ids(self) -> list[str]:
        return [c.id for c in self.configs]

    @property
    def layer_names(self) -> list[str]:
        return [layer["name"] for layer in self.layers]

    @property
    def computed_layers(self) -> list[str]:
        done = {layer for layer, _ in self.cells}
        return [name for name in self.layer_names if name in done]

    @property
    def ranking_metric(self) -> str:
        return "kl" if self.output_kind == "classification" else "sqnr"

    def cell(self, layer: str, config: str) -> SensitivityCell:
        return self.cells[(layer, config)]

    def matrix(self, metric: str = "kl_mean") -> list[list[float | None]]:
        """Rows = computed layers (depth order), columns = configs; None where undefined."""
        return [
            [
                getattr(self.cells[(layer, cid)].divergence, metric) if (layer, cid) in self.cells else None
                for cid in self.config_ids
            ]
            for layer in self.computed_layers
        ]

    def ranking(self, config: str | None = None) -> list[str]:
        """Computed layers, most sensitive first: for one config, or overall (mean score over configs).

        "only": the layer whose compression alone hurts most comes first. "all_but": the layer whose
        staying in float helps most (the lowest divergence with everything else compressed) comes first."""
        metric = self.ranking_metric
        depth = {name: i for i, name in enumerate(self.layer_names)}
        sign = 1.0 if self.mode == "only" else -1.0

        def scores(layer: str) -> list[float]:
            ids = [config] if config is not None else self.config_ids
            return [
                sign * self.cells[(layer, cid)].divergence.score(metric)
                for cid in ids
                if (layer, cid) in self.cells
            ]

        def key(layer: str) -> tuple[float, float, int]:
            values = scores(layer)
            mean = sum(values) / len(values) if values else -math.inf
            return (
                -mean if not math.isnan(mean) else math.inf,
                -max(values, default=-math.inf),
                depth[layer],
            )

        return sorted(self.computed_layers, key=key)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (no NaN / inf: undefined numbers are None, infinite SQNR has its flag)."""
        metric = self.ranking_metric
        return {
            "mode": self.mode,
            "configs": [
                {"id": c.id, "config": c.to_dict(), "weight_bits": weight_bits(c)} for c in self.configs
            ],
            "layers": [dict(layer) for layer in self.layers],
            "computed_layers": self.computed_layers,
            "primary_output": self.primary_output,
            "output_kind": self.output_kind,
            "n_samples": self.n_samples,
            "model": dict(self.model),
            "ranking_metric": metric,
            "matrix": {
                "rows": self.computed_layers,
                "columns": self.config_ids,
                **{m: self.matrix(m) for m in ("kl_mean", "top1_agreement", "sqnr_db")},
                "sqnr_db_infinite": [
                    [v is not None and math.isinf(v) and v > 0 for v in row] for row in self.matrix("sqnr_db")
                ],
            },
            "ranking": {
                "overall": self.ranking(),
                "by_config": {cid: self.ranking(cid) for cid in self.config_ids},
            },
            "cells": [self.cells[key].to_dict() for key in self._ordered_keys()],
            "whole_model": {cid: d.to_dict() for cid, d in self.whole_model.items()},
            "notes": list(self.notes),
        }

    def _ordered_keys(self) -> list[tuple[str, str]]:
        return [
            (layer, cid)
            for layer in self.computed_layers
            for cid in self.config_ids
            if (layer, cid) in self.cells
        ]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SensitivityResult:
        cells = [SensitivityCell.from_dict(c) for c in data["cells"]]
        return cls(
            mode=data["mode"],
            configs=[config_from_dict(c["config"]) for c in data["configs"]],
            layers=[dict(layer) for layer in data["layers"]],
            cells={(c.layer, c.config): c for c in cells},
            primary_output=data["primary_output"],
            output_kind=data["output_kind"],
            n_samples=int(data["n_samples"]),
            model=dict(data["model"]),
            whole_model={cid: Divergence.from_dict(d) for cid, d in data.get("whole_model", {}).items()},
            notes=list(data["notes"]),
        )


def _configs(configs: Sequence[Config | Mapping[str, Any]]) -> list[Config]:
    parsed = [c if not isinstance(c, Mapping) else config_from_dict(c) for c in configs]
    if not parsed:
        raise EngineError("configs must list at least one compression config")
    ids = [c.id for c in parsed]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise EngineError(f"configs must be distinct; repeated: {duplicates}")
    return parsed


def layer_sensitivity(
    golden: Any,
    calibration_feeds: Feeds,
    configs: Sequence[Config | Mapping[str, Any]],
    *,
    layers: Sequence[str] | None = None,
    mode: Mode = "only",
    batch_size: int = 64,
    whole_model: bool = False,
    on_progress: Progress | None = None,
    reuse_prefix: bool = True,
    reference: Golden | None = None,
) -> SensitivityResult:
    """Sensitivity of each layer in `layers` (default: every compressible layer) to each config.

    golden: a CompressibleModel or anything `compression.as_compressible` accepts (nn.Module, ONNX
    ModelProto, torch.export program, TorchRunner...). mode "only": compress the layer alone; "all_but":
    compress every other layer. whole_model: also measure each config on all layers at once.
    on_progress(done, total) is called after each cell; it may raise JobCancelled.
    reuse_prefix: compute "only" cells of ONNX models from the golden prefix (`sensitivity_suffix`);
    False re-runs the whole model for every cell (the reference the fast path is tested against).
    reference: golden outputs computed beforehand in batches of `batch_size` (shared by fan-out chunks).
    """
    if mode not in ("only", "all_but"):
        raise EngineError(f"mode must be 'only' or 'all_but', got {mode!r}")
    if batch_size < 1:
        raise EngineError(f"batch_size must be at least 1, got {batch_size}")
    parsed = _configs(configs)
    model = as_compressible(golden)
    model.prepare(first_sample(calibration_feeds))
    all_layers = [layer.name for layer in model.layers()]
    targets = list(dict.fromkeys(layers)) if layers is not None else all_layers
    model.check_layers(targets)
    if reference is None:
        reference = golden_outputs(model, calibration_feeds, batch_size)
    elif reference.batch_size != batch_size:
        raise EngineError(
            f"the golden outputs were computed in batches of {reference.batch_size}, not {batch_size}"
        )
    calibration = Calibration(model, calibration_feeds, batch_size)
    cells: dict[tuple[str, str], SensitivityCell] = {}
    total = len(targets) * len(parsed) + (len(parsed) if whole_model else 0)
    done = 0
    for layer, config, divergence, outcome in _only_or_all_but(
        model, calibration_feeds, parsed, targets, all_layers, mode, reference, calibration, reuse_prefix
    ):
        chosen = [layer] if mode == "only" else [name for name in all_layers if name != layer]
        cells[(layer, config.id)] = _cell(layer, config, divergence, outcome, chosen, mode)
        done += 1
        if on_progress is not None:
            on_progress(done, total)
    whole: dict[str, Divergence] = {}
    if whole_model:
        for config in parsed:
            with compressed(model, dict.fromkeys(all_layers, config), calibration) as (runner, _):
                whole[config.id] = measure(runner, calibration_feeds, reference)
            done += 1
            if on_progress is not None:
                on_progress(done, total)
    return SensitivityResult(
        mode=mode,
        configs=parsed,
        layers=[layer.to_dict() for layer in model.layers()],
        cells=cells,
        primary_output=reference.output,
        output_kind=reference.kind,
        n_samples=reference.n_samples,
        model={
            "backend": model.backend,
            "weights_digest": model.weights_digest(),
            "golden_digest": reference.digest(),
        },
        whole_model=whole,
        notes=list(model.notes),
    )


def _only_or_all_but(
    model: CompressibleModel,
    feeds: Feeds,
    configs: list[Config],
    targets: list[str],
    all_layers: list[str],
    mode: Mode,
    reference: Golden,
    calibration: Calibration,
    reuse_prefix: bool,
) -> Iterator[tuple[str, Config, Divergence, CompressionOutcome]]:
    """Every layer × config cell: from the golden prefix where it applies, else by re-running the model."""
    if reuse_prefix and mode == "only" and isinstance(model, OnnxCompressible):
        fast = only_cells_from_suffix(model, feeds, configs, targets, reference, calibration)
        if fast is not None:
            yield from fast
            return
    for config in configs:
        cache: dict[Any, Any] = {}  # compressed tensors of each layer, reused by the cells of this config
        for layer in targets:
            chosen = [layer] if mode == "only" else [name for name in all_layers if name != layer]
            with compressed(model, dict.fromkeys(chosen, config), calibration, cache) as (runner, outcome):
                divergence = measure(runner, feeds, reference)
            yield layer, config, divergence, outcome


def _cell(
    layer: str,
    config: Config,
    divergence: Divergence,
    outcome: CompressionOutcome,
    chosen: list[str],
    mode: Mode,
) -> SensitivityCell:
    affected = sorted({a for lst in outcome.affected_layers.values() for a in lst} - set(chosen))
    notes = list(outcome.notes)
    if mode == "all_but" and layer in affected:
        notes.append(f"{layer} shares a tensor with a compressed layer, so it was compressed too")
    if divergence.n_nonfinite:
        notes.append(f"{divergence.n_nonfinite} of {divergence.n_samples} compressed outputs hold NaN/Inf")
    changed = [name for lst in outcome.changed.values() for name in lst]
    return SensitivityCell(layer, config.id, divergence, changed, affected, notes)


def merge_sensitivity(results: Sequence[SensitivityResult | Mapping[str, Any]]) -> SensitivityResult:
    """Join chunk results of one scan. Raises SensitivityMergeError when they differ in model, data,
    configs or mode, or when a cell computed twice has different values."""
    parsed = [r if isinstance(r, SensitivityResult) else SensitivityResult.from_dict(r) for r in results]
    if not parsed:
        raise SensitivityMergeError("nothing to merge")
    first = parsed[0]
    cells: dict[tuple[str, str], SensitivityCell] = {}
    whole: dict[str, Divergence] = {}
    for index, result in enumerate(parsed):
        for what, mine, theirs in (
            ("mode", result.mode, first.mode),
            ("configs", result.config_ids, first.config_ids),
            ("layers", result.layers, first.layers),
            ("model", result.model, first.model),
            ("n_samples", result.n_samples, first.n_samples),
            ("primary_output", result.primary_output, first.primary_output),
        ):
            if mine != theirs:
                raise SensitivityMergeError(
                    f"result {index} differs from result 0 in {what}: {mine!r} vs {theirs!r}"
                )
        for key, cell in result.cells.items():
            if key in cells and cells[key] != cell:
                raise SensitivityMergeError(f"cell {key} was computed twice with different values")
            cells[key] = cell
        for cid, d in result.whole_model.items():
            if cid in whole and whole[cid] != d:
                raise SensitivityMergeError(f"whole-model result of {cid} differs between chunks")
            whole[cid] = d
    return SensitivityResult(
        mode=first.mode,
        configs=list(first.configs),
        layers=[dict(layer) for layer in first.layers],
        cells=cells,
        primary_output=first.primary_output,
        output_kind=first.output_kind,
        n_samples=first.n_samples,
        model=dict(first.model),
        whole_model=whole,
        notes=list(dict.fromkeys(n for r in parsed for n in r.notes)),
    )


def importance(
    golden: Any, layer: str, method: ImportanceMethod, calibration_feeds: Feeds | None = None, **kwargs: Any
) -> ChannelImportance:
    """`compression.importance.channel_importance` on anything `as_compressible` accepts."""
    return channel_importance(as_compressible(golden), layer, method, calibration_feeds, **kwargs)
