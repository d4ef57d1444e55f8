"""Merging the chunk results of one sensitivity scan (split from `sensitivity`, which re-exports it).

A job may split the layers over workers, `layer_sensitivity(..., layers=chunk)` each, and
`merge_sensitivity` joins the results. Every chunk sees the whole model (layer metadata, depth order,
golden outputs and activation ranges are computed from the full model and the same calibration set,
and every evaluation starts from the untouched golden weights), so merged chunks equal one full run
exactly; merging checks that the chunks agree on model, data, configs and mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from worker.engine.compression.divergence import Divergence
from worker.engine.errors import EngineError
from worker.engine.sensitivity.result import SensitivityCell, SensitivityResult


class SensitivityMergeError(EngineError):
    """Chunk results that do not belong to the same scan."""


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
            ("batch_size", result.batch_size, first.batch_size),
            ("primary_output", result.primary_output, first.primary_output),
            ("task", result.task, first.task),
            ("rank_by", result.rank_by, first.rank_by),
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
        batch_size=first.batch_size,
        task=first.task,
        rank_by=first.rank_by,
        screening=next((r.screening for r in parsed if r.screening is not None), None),  # one chunk screens
    )
