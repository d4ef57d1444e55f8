"""The "only" cells of a sensitivity scan computed from the golden prefix (ONNX models).

For each layer (depth order) and each config, the plan {layer: config} is resolved exactly as the full
re-run resolves it (same compressed tensors, same activation ranges); its suffix (`suffix_onnx`) runs
from the golden cut tensors. Layers are taken in groups whose cut tensors for the whole calibration set
fit `budget_bytes`; each group costs one pass of its prefix. Each cell's divergence is accumulated with
the same `DivergenceAccumulator` as `measure`, batch by batch, so the numbers are those of the full
re-run whenever onnxruntime computes the suffix as it computes the same nodes inside the whole model
(tests/engine/test_sensitivity_suffix.py compares every cell on a residual CNN and a transformer block).

Torch models are not split: a torch model's forward is Python code, and resuming it from a cut needs a
graph (torch.fx / torch.export) of every model the scan accepts, which TorchScript and modules with
data-dependent control flow do not give; torch scans re-run the whole model per cell.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from worker.engine.compression.configs import Config
from worker.engine.compression.divergence import Divergence, DivergenceAccumulator, Golden
from worker.engine.compression.layers import CompressionOutcome
from worker.engine.compression.model import Calibration, Feeds, resolve
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.suffix_onnx import CellSuffix, OnnxSuffixes

CUT_BUDGET_BYTES = 512 << 20
"""Golden cut tensors kept at once (all calibration batches of a group of layers)."""
SUFFIX_BUDGET_BYTES = 256 << 20
"""Serialised suffix models of a group kept at once (they carry their compressed weights)."""


@dataclass
class _Cell:
    config: Config
    outcome: CompressionOutcome
    suffix: CellSuffix | None


_last: list[OnnxSuffixes] = []
"""The last model's optimised golden graph: a worker that takes several chunks of one job (the same
handle) optimises it once (EfficientNet-Lite0: 0.3 s)."""


def _suffixes(model: OnnxCompressible, output: str, feeds: Feeds) -> OnnxSuffixes:
    if _last and _last[0].handle is model and _last[0].output == output:
        return _last[0]
    _last.clear()  # let the previous model go first
    _last.append(OnnxSuffixes(model, output, feeds))
    return _last[0]


def only_cells_from_suffix(
    model: OnnxCompressible,
    feeds: Feeds,
    configs: Sequence[Config],
    layers: Sequence[str],
    reference: Golden,
    calibration: Calibration,
    *,
    budget_bytes: int = CUT_BUDGET_BYTES,
    suffix_budget_bytes: int = SUFFIX_BUDGET_BYTES,
) -> Iterator[tuple[str, Config, Divergence, CompressionOutcome]] | None:
    """(layer, config, divergence, outcome) of every cell, layer by layer; None when the model cannot be
    split (sub-graphs), so the caller re-runs the whole model."""
    suffixes = _suffixes(model, reference.output, feeds)
    if not suffixes.supported:
        return None
    return _cells(suffixes, feeds, configs, layers, reference, calibration, budget_bytes, suffix_budget_bytes)


def _cells(
    suffixes: OnnxSuffixes,
    feeds: Feeds,
    configs: Sequence[Config],
    layers: Sequence[str],
    reference: Golden,
    calibration: Calibration,
    budget_bytes: int,
    suffix_budget_bytes: int,
) -> Iterator[tuple[str, Config, Divergence, CompressionOutcome]]:
    caches: dict[str, dict[Any, Any]] = {config.id: {} for config in configs}
    group: list[tuple[str, list[_Cell]]] = []
    group_cut: set[str] = set()

    def flush() -> Iterator[tuple[str, Config, Divergence, CompressionOutcome]]:
        cuts = suffixes.golden_cuts(sorted(group_cut), feeds, reference.batch_size)
        for layer, cells in group:
            for cell in cells:
                accumulator = DivergenceAccumulator(reference)
                suffix, cell.suffix = cell.suffix, None  # a group holds only what is still to run
                outputs = (
                    reference.outputs
                    if suffix is None or suffix.model is None
                    else suffixes.run(suffix, cuts)
                )
                for index, output in enumerate(outputs):  # the golden outputs: nothing upstream changed
                    accumulator.update(index, output)
                yield layer, cell.config, accumulator.result(), cell.outcome

    group_models = 0
    for layer in layers:
        cells = []
        for config in configs:
            outcome, chains = resolve(suffixes.handle, {layer: config}, calibration, caches[config.id])
            cells.append(_Cell(config, outcome, suffixes.cell(outcome.tensors, chains)))
            outcome.tensors = {}  # written into the cell's suffix model
        cut = {name for cell in cells if cell.suffix is not None for name in cell.suffix.cut}
        models = sum(len(cell.suffix.model or b"") for cell in cells if cell.suffix is not None)
        too_big = suffixes.cut_bytes([*group_cut, *cut]) * reference.n_samples > budget_bytes
        if group and (too_big or group_models + models > suffix_budget_bytes):
            yield from flush()
            group, group_cut, group_models = [], set(), 0
        group.append((layer, cells))
        group_cut |= cut
        group_models += models
    if group:
        yield from flush()
