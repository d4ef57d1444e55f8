"""How a sensitivity scan is cut into chunks (worker/jobs/sensitivity_chunks.py) and the order chunks are sent
(worker/fanout.py dispatch_order): the split is checked against a brute force over every contiguous split."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, pairwise

import pytest

from worker.fanout import dispatch_order
from worker.jobs.sensitivity_chunks import CELL_OVERHEAD, PREFIX_WEIGHT, balanced_chunks, chunk_cost


@dataclass(frozen=True)
class Layer:
    name: str
    macs: int | None


def _layers(macs: list[int | None]) -> list[Layer]:
    return [Layer(f"l{i}", m) for i, m in enumerate(macs)]


def _brute_force(downstream: list[float], total: float, n_configs: int, n_chunks: int) -> float:
    """The smallest largest-chunk cost over every split of the layers into at most n_chunks runs."""
    best = float("inf")
    n = len(downstream)
    for k in range(1, min(n_chunks, n) + 1):
        for cuts in combinations(range(1, n), k - 1):
            edges = [0, *cuts, n]
            worst = max(chunk_cost(downstream[a:b], total, n_configs) for a, b in pairwise(edges))
            best = min(best, worst)
    return best


def test_the_cost_counts_one_prefix_pass_and_every_cells_suffix() -> None:
    # layers of 10, 20, 30 MACs: downstream 60, 50, 30; the chunk of the last two layers with 2 configs
    cost = chunk_cost([50.0, 30.0], 60.0, 2)
    assert cost == pytest.approx(PREFIX_WEIGHT * (60 - 30) + 2 * (50 + 30 + 2 * CELL_OVERHEAD * 60))


@pytest.mark.parametrize(
    "macs",
    [
        [100, 90, 80, 70, 60, 50, 40, 30, 20, 10],  # a CNN: shallow layers cost the most
        [5, 5, 5, 5, 5, 5, 5, 5, 5],
        [1, 1000, 1, 1, 500, 1, 1],
        [40, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 200],
    ],
)
@pytest.mark.parametrize("n_chunks", [1, 2, 3, 5])
def test_the_split_is_contiguous_and_as_balanced_as_any_split(macs: list[int], n_chunks: int) -> None:
    layers = _layers(list(macs))
    names = [layer.name for layer in layers]
    chunks = balanced_chunks(names, layers, n_chunks, n_configs=2)
    assert [name for chunk in chunks for name in chunk.layers] == names  # every layer once, in depth order
    assert 1 <= len(chunks) <= n_chunks and all(chunk.layers for chunk in chunks)
    total = float(sum(macs))
    downstream = [float(sum(macs[i:])) for i in range(len(macs))]
    worst = max(chunk.cost for chunk in chunks) * total
    assert worst == pytest.approx(_brute_force(downstream, total, 2, n_chunks), rel=1e-5)


def test_a_subset_of_layers_keeps_the_whole_models_costs() -> None:
    layers = _layers([50, 40, 30, 20, 10])
    chunks = balanced_chunks(["l1", "l3"], layers, 2, n_configs=1)
    assert [c.layers for c in chunks] == [["l1"], ["l3"]]
    # l3's suffix is its own 20 and the last layer's 10 MACs, its prefix the 120 before it
    assert chunks[1].cost == pytest.approx((PREFIX_WEIGHT * 120 + 30 + CELL_OVERHEAD * 150) / 150)


def test_without_mac_counts_layers_are_shared_out_evenly() -> None:
    layers = _layers([10, None, 10, 10, 10])
    chunks = balanced_chunks([layer.name for layer in layers], layers, 2, n_configs=2)
    assert [len(c.layers) for c in chunks] == [3, 2]
    # in whole-model passes, like the costs with MACs: each layer's 2 cells at 1 + CELL_OVERHEAD
    assert [c.cost for c in chunks] == pytest.approx([6 * (1 + CELL_OVERHEAD), 4 * (1 + CELL_OVERHEAD)])


def test_cells_that_rerun_the_whole_model_cost_a_pass_each_wherever_the_layer_is() -> None:
    # torch models (no suffix split): every layer costs the same, so the split is by count
    layers = _layers([100, 90, 80, 70, 60, 50])
    torch_like = balanced_chunks([layer.name for layer in layers], layers, 3, 0, whole_model_cells=2)
    assert [len(c.layers) for c in torch_like] == [2, 2, 2]
    assert all(c.cost == pytest.approx(4 * (1 + CELL_OVERHEAD)) for c in torch_like)
    # "all but" cells on top of an ONNX model's suffix cells: a whole pass more per layer and config
    only = chunk_cost([150.0, 50.0], 450.0, 2)
    assert chunk_cost([150.0, 50.0], 450.0, 2, whole_model_cells=2) == pytest.approx(
        only + 2 * 2 * 450 * (1 + CELL_OVERHEAD)
    )


def test_chunks_are_sent_largest_first() -> None:
    assert dispatch_order([1.0, 4.0, 2.0, 4.0, 0.0]) == [1, 3, 2, 0, 4]
    assert dispatch_order([0.0, 0.0, 0.0]) == [0, 1, 2]  # specs without a cost keep their order
