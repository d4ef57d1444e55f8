"""The result of a sensitivity scan: one `SensitivityCell` per layer × config, in a `SensitivityResult`
(split from `sensitivity`, which re-exports every name here).

Ranking (most sensitive first): each cell scores KL mean for classifiers, else −SQNR dB (a non-finite
compressed output scores +inf). Per config, layers are sorted by that score; overall, by the mean score
over configs (ties: larger maximum, then depth order).

A scan with a task (`rank_by` set) ranks by one of the cells' task metrics instead (`task_cells`): by the
project's one direction rule (`task_specs.directions.higher_is_better`, the sweep frontier's and kneeboard
check's), a `_drop` / `_delta` scores its value (a larger drop is more sensitive) and a higher-is-better
metric (miou_vs_golden) its negative; a cell whose metric is undefined (None) ranks last.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from task_specs.directions import higher_is_better
from task_specs.metrics import TASK_PREFIX
from worker.engine.compression.configs import Config, config_from_dict, weight_bits
from worker.engine.compression.divergence import Divergence

Mode = Literal["only", "all_but"]
Progress = Callable[[int, int], None]


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
    task_metrics: dict[str, float | None] = field(default_factory=dict)
    """The task block's top-level numbers of this cell (empty when the scan has no task)."""
    exact: bool = True
    """False: estimated by screening (`screening`), not measured; its divergence holds the estimate."""
    estimate: float | None = None
    """Screening's local SQNR (dB) of this cell (None when the scan did not screen, or it is infinite)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "config": self.config,
            **self.divergence.to_dict(),
            "compressed": list(self.compressed),
            "affected_layers": list(self.affected_layers),
            "notes": list(self.notes),
            "task_metrics": dict(self.task_metrics),
            "exact": self.exact,
            "estimate": self.estimate,
        }

    def score(self, metric: str) -> float:
        """Sensitivity score, higher = more sensitive: "kl" / "sqnr" (see `Divergence.score`) or a task
        metric "task.<name>" (NaN where it is undefined)."""
        if not metric.startswith(TASK_PREFIX):
            return self.divergence.score(metric)
        value = self.task_metrics.get(metric.removeprefix(TASK_PREFIX))
        if value is None:
            return math.nan
        return -value if higher_is_better(metric) else value

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SensitivityCell:
        return cls(
            layer=data["layer"],
            config=data["config"],
            divergence=Divergence.from_dict(data),
            compressed=list(data["compressed"]),
            affected_layers=list(data["affected_layers"]),
            notes=list(data["notes"]),
            task_metrics=dict(data.get("task_metrics") or {}),  # absent in scans made without a task
            exact=bool(data.get("exact", True)),  # absent in scans made before screening
            estimate=data.get("estimate"),
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
    batch_size: int | None = None
    """Samples per run of the scan (None in documents written before it was recorded)."""
    task: str = "auto"
    """The task the cells were scored on ("auto": no task cells, unless rank_by names a metric)."""
    rank_by: str | None = None
    """The task metric layers are ranked by (its bare name, e.g. map50_drop); None: KL / SQNR."""
    screening: dict[str, Any] | None = None
    """A screened scan's summary (top_k, control, seed, top_layers, control_layers, exact_cells,
    total_cells, spearman); None: every cell was measured."""

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
        if self.rank_by is not None:
            return TASK_PREFIX + self.rank_by
        return "kl" if self.output_kind == "classification" else "sqnr"

    @property
    def task_metric_names(self) -> list[str]:
        """Every task metric a cell recorded, in first-seen order."""
        return list(dict.fromkeys(name for cell in self.cells.values() for name in cell.task_metrics))

    def task_matrix(self, name: str) -> list[list[float | None]]:
        """`matrix` of one task metric (None where a cell has no number)."""
        return [
            [
                self.cells[(layer, cid)].task_metrics.get(name) if (layer, cid) in self.cells else None
                for cid in self.config_ids
            ]
            for layer in self.computed_layers
        ]

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
                sign * self.cells[(layer, cid)].score(metric) for cid in ids if (layer, cid) in self.cells
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
            "batch_size": self.batch_size,
            "model": dict(self.model),
            "ranking_metric": metric,
            "task": self.task,
            "rank_by": self.rank_by,
            "matrix": {
                "rows": self.computed_layers,
                "columns": self.config_ids,
                **{m: self.matrix(m) for m in ("kl_mean", "top1_agreement", "sqnr_db")},
                "sqnr_db_infinite": [
                    [v is not None and math.isinf(v) and v > 0 for v in row] for row in self.matrix("sqnr_db")
                ],
                "task_metrics": {name: self.task_matrix(name) for name in self.task_metric_names},
                "exact": [
                    [
                        self.cells[(layer, cid)].exact if (layer, cid) in self.cells else False
                        for cid in self.config_ids
                    ]
                    for layer in self.computed_layers
                ],
            },
            "ranking": {
                "overall": self.ranking(),
                "by_config": {cid: self.ranking(cid) for cid in self.config_ids},
            },
            "cells": [self.cells[key].to_dict() for key in self._ordered_keys()],
            "whole_model": {cid: d.to_dict() for cid, d in self.whole_model.items()},
            "notes": list(self.notes),
            "screening": dict(self.screening) if self.screening is not None else None,
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
            batch_size=data.get("batch_size"),
            task=str(data.get("task") or "auto"),
            rank_by=data.get("rank_by"),
            screening=data.get("screening"),
        )
