"""The "only" cells of a sensitivity scan computed from the golden prefix (ONNX models).

For each layer (depth order) and each config, the plan {layer: config} is resolved exactly as the full
re-run resolves it (same compressed tensors, same activation ranges); its suffix (`suffix_onnx`) runs
from the golden cut tensors. Layers are taken in groups: one batch's cut tensors of a group must fit
`budget_bytes` and its suffix sessions' weights `suffix_budget_bytes`. A group is run batch by batch:
one pass of its prefix gives every cut tensor of the batch, then every cell's suffix session runs on
it. (Keeping the cut of every batch instead, a shallow layer's cut at 224 px filled the budget alone, so
each shallow layer paid a prefix pass for two cells: EfficientNet-Lite0 only 1.68x the naive loop.)
Each cell's divergence is accumulated with the same `DivergenceAccumulator` as `measure`, batch by
batch, so the numbers are those of the full
re-run whenever onnxruntime computes the suffix as it computes the same nodes inside the whole model
(tests/engine/test_sensitivity_suffix.py compares every cell on a residual CNN and a transformer block).

Torch models are not split: a torch model's forward is Python code, and resuming it from a cut needs a
graph (torch.fx / torch.export) of every model the scan accepts, which TorchScript and modules with
data-dependent control flow do not give; torch scans re-run the whole model per cell.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from worker.engine.compression.configs import Config
from worker.engine.compression.divergence import Divergence, DivergenceAccumulator, Golden
from worker.engine.compression.layers import CompressionOutcome
from worker.engine.compression.model import Calibration, Feeds, resolve
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.loaders import OnnxRunner
from worker.engine.sensitivity.suffix_onnx import CellSuffix, OnnxSuffixes

CUT_BUDGET_BYTES = 256 << 20
"""Golden cut tensors of one batch for a group of layers, kept at once."""
SUFFIX_BUDGET_BYTES = 512 << 20
"""Changed weights of the suffix sessions of a group, open at once (the golden ones are shared by all,
`suffix_sessions`)."""
MAX_OPEN_SESSIONS = 32
"""Suffix sessions open at once: each costs a few MiB beside its weights (a 500-layer model's scan with
every session of a group open peaked at 6.2 GB)."""


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
    model.release_sessions()  # the golden outputs are known: the scan runs parts of the optimised graph
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
    group: list[tuple[str, list[_Cell]]] = []
    group_cut: set[str] = set()

    def flush() -> Iterator[tuple[str, Config, Divergence, CompressionOutcome]]:
        # batch by batch: one prefix pass gives the golden cut of every layer of the group for that batch,
        # and every cell's suffix session (all open for the group) takes its part of it
        cells = [(layer, cell) for layer, layer_cells in group for cell in layer_cells]
        accumulators = [DivergenceAccumulator(reference) for _ in cells]
        runners: list[OnnxRunner | None] = []
        try:
            for _, cell in cells:
                suffix = cell.suffix
                runners.append(suffixes.runner(suffix) if suffix is not None and suffix.model else None)
                cell.suffix = None if suffix is None or not suffix.model else suffix
            batches = suffixes.golden_cut_batches(sorted(group_cut), feeds, reference.batch_size)
            for index, cut in enumerate(batches):
                for (_, cell), runner, accumulator in zip(cells, runners, accumulators, strict=True):
                    if runner is None or cell.suffix is None:  # nothing upstream of the output changed
                        accumulator.update(index, reference.outputs[index])
                        continue
                    feeds_of_cell = {name: cut[name] for name in cell.suffix.cut}
                    accumulator.update(index, runner.run(feeds_of_cell)[suffixes.output])
        finally:
            for runner in runners:
                if runner is not None:
                    runner.close()
        for (layer, cell), accumulator in zip(cells, accumulators, strict=True):
            cell.suffix = None
            yield layer, cell.config, accumulator.result(), cell.outcome

    group_models = 0
    for layer in layers:
        cells = []
        for config in configs:
            # no cache of compressed tensors: each layer is compressed once per config here, and keeping them
            # all held another copy of the model's weights per config
            outcome, chains = resolve(suffixes.handle, {layer: config}, calibration)
            cells.append(_Cell(config, outcome, suffixes.cell(outcome.tensors, chains)))
            outcome.tensors = {}  # written into the cell's suffix model
        cut = {name for cell in cells if cell.suffix is not None for name in cell.suffix.cut}
        models = sum(cell.suffix.weight_bytes for cell in cells if cell.suffix is not None)
        too_big = suffixes.cut_bytes([*group_cut, *cut]) * reference.batch_size > budget_bytes
        sessions = sum(len(layer_cells) for _, layer_cells in group) + len(cells)
        if group and (too_big or group_models + models > suffix_budget_bytes or sessions > MAX_OPEN_SESSIONS):
            yield from flush()
            group, group_cut, group_models = [], set(), 0
        group.append((layer, cells))
        group_cut |= cut
        group_models += models
    if group:
        yield from flush()
