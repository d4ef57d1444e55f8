"""The sensitivity scan's prefix reuse: every cell computed from the golden prefix equals the cell of the
full re-run (a new session of the whole compressed model per cell), on a residual CNN with a strided
shortcut and on a transformer block; the suffix is the part downstream of the layer, skips included. The
scan's default batch: the largest tensor one sample writes (ONNX shape inference when the model is
prepared) against what onnxruntime writes, and the batch that keeps a batch's largest tensor in budget."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from tests.support.residual import BasicBlock
from worker.demo.models import export_onnx
from worker.engine.compression import (
    ActivationQuant,
    FloatCast,
    LowRank,
    Quantize,
    WeightQuant,
    open_compressible,
)
from worker.engine.compression.configs import Config
from worker.engine.compression.divergence import golden_outputs
from worker.engine.compression.model import first_sample
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.sensitivity import scan as sensitivity
from worker.engine.sensitivity.scan import (
    SCAN_BATCH_ACTIVATION_BYTES,
    SCAN_BATCH_CAP,
    SensitivityResult,
    layer_sensitivity,
    scan_batch_size,
)
from worker.engine.sensitivity.suffix_onnx import CellSuffix, OnnxSuffixes

pytestmark = pytest.mark.usefixtures("one_torch_thread")

W = 8
CONFIGS: list[Config] = [
    WeightQuant(8),
    WeightQuant(4, per_channel=True),
    Quantize(WeightQuant(6), ActivationQuant(6)),
    FloatCast("fp16"),
    LowRank(0.5),
]
METRICS = ("kl_mean", "kl_max", "top1_agreement", "sqnr_db", "mse")


class ResidualCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, W, 3, 1, 1)
        self.block1 = BasicBlock(W, W, 1)
        self.block2 = BasicBlock(W, 2 * W, 2)
        self.fc = nn.Linear(2 * W, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block2(self.block1(torch.relu(self.stem(x))))
        return self.fc(x.mean(dim=(2, 3)))


class TransformerBlock(nn.Module):
    """Pre-norm self-attention and MLP with residuals, then a mean-pooled classifier head."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.head = nn.Linear(dim, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, s, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        attention = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads), dim=-1)
        x = x + self.proj((attention @ v).transpose(1, 2).reshape(b, s, d))
        x = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))
        return self.head(x.mean(dim=1))


def _trained_like(model: nn.Module, seed: int) -> nn.Module:
    """Random weights and batch-norm statistics (so that folding them changes the weights)."""
    torch.manual_seed(seed)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.2, 0.2)
    return model.eval()


@pytest.fixture(scope="module")
def residual_cnn(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    x = np.random.default_rng(0).standard_normal((40, 3, 12, 12)).astype(np.float32)
    path = export_onnx(_trained_like(ResidualCNN(), 0), x[:2], tmp_path_factory.mktemp("res") / "res.onnx")
    return path, {"input": x}


@pytest.fixture(scope="module")
def transformer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    x = np.random.default_rng(1).standard_normal((40, 6, 32)).astype(np.float32)
    model = _trained_like(TransformerBlock(), 1)
    path = export_onnx(model, x[:2], tmp_path_factory.mktemp("tf") / "block.onnx")
    return path, {"input": x}


def _scan(
    path: Path, feeds: dict[str, np.ndarray], reuse_prefix: bool, **kwargs: object
) -> SensitivityResult:
    handle = open_compressible(path, "onnx", intra_op_threads=1)
    return layer_sensitivity(handle, feeds, CONFIGS, batch_size=16, reuse_prefix=reuse_prefix, **kwargs)  # type: ignore[arg-type]


def _assert_same_cells(fast: SensitivityResult, full: SensitivityResult) -> float:
    """Every cell's every metric within 1e-6 relative; returns the largest relative difference."""
    assert fast.cells.keys() == full.cells.keys()
    worst = 0.0
    for key, cell in full.cells.items():
        other = fast.cells[key]
        assert (other.compressed, other.affected_layers, other.notes) == (
            cell.compressed,
            cell.affected_layers,
            cell.notes,
        )
        for metric in METRICS:
            a, b = getattr(other.divergence, metric), getattr(cell.divergence, metric)
            assert (a is None) == (b is None), (key, metric)
            if a is None or a == b:
                continue
            relative = abs(a - b) / max(abs(a), abs(b))
            worst = max(worst, relative)
            assert relative <= 1e-6, (key, metric, a, b)
    return worst


@pytest.mark.parametrize("model", ["residual_cnn", "transformer"])
def test_every_cell_from_the_prefix_equals_the_full_rerun(model: str, request: pytest.FixtureRequest) -> None:
    path, feeds = request.getfixturevalue(model)
    fast = _scan(path, feeds, True)
    full = _scan(path, feeds, False)
    assert len(fast.computed_layers) >= 5
    # the same kernels on the same values: not merely within 1e-6, equal
    assert _assert_same_cells(fast, full) == 0.0
    assert fast.to_dict()["ranking"] == full.to_dict()["ranking"]
    kl = np.array(fast.matrix("kl_mean"), dtype=float)
    assert (kl[:, 1] > 0).all()  # every layer's 4-bit cell changed the output: no silent golden copy


def test_small_cut_budgets_split_the_scan_into_groups_with_the_same_numbers(
    residual_cnn: tuple[Path, dict[str, np.ndarray]],
) -> None:
    from worker.engine.compression.model import Calibration
    from worker.engine.sensitivity.suffix import only_cells_from_suffix

    path, feeds = residual_cnn
    handle = open_compressible(path, "onnx", intra_op_threads=1)
    assert isinstance(handle, OnnxCompressible)
    handle.prepare({"input": feeds["input"][:1]})
    reference = golden_outputs(handle, feeds, 16)
    layers = [layer.name for layer in handle.layers()]
    passes: list[int] = []
    suffixes_cls = OnnxSuffixes
    original = suffixes_cls.golden_cut_batches

    def counting(self: OnnxSuffixes, *args: object, **kwargs: object) -> object:
        passes.append(1)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    results = {}
    for budget in (1, 1 << 40):
        passes.clear()
        suffixes_cls.golden_cut_batches = counting  # type: ignore[method-assign,assignment]
        try:
            cells = only_cells_from_suffix(
                handle,
                feeds,
                CONFIGS[:2],
                layers,
                reference,
                Calibration(handle, feeds, 16),
                budget_bytes=budget,
            )
            assert cells is not None
            results[budget] = {(layer, c.id): d for layer, c, d, _ in cells}
        finally:
            suffixes_cls.golden_cut_batches = original  # type: ignore[method-assign]
        assert len(passes) == (len(layers) if budget == 1 else 1)
    assert results[1] == results[1 << 40]


def test_the_suffix_starts_at_the_layer_and_takes_the_skip_connections(
    residual_cnn: tuple[Path, dict[str, np.ndarray]],
) -> None:
    from worker.engine.compression.model import resolve

    path, feeds = residual_cnn
    handle = open_compressible(path, "onnx", intra_op_threads=1)
    assert isinstance(handle, OnnxCompressible)
    handle.prepare({"input": feeds["input"][:1]})
    suffixes = OnnxSuffixes(handle, handle.outputs[0].name, feeds)

    def suffix(layer: str) -> CellSuffix:
        outcome, chains = resolve(handle, {layer: WeightQuant(4)}, None)
        return suffixes.cell(outcome.tensors, chains)

    names = [layer.name for layer in handle.layers()]
    first, conv1, conv2, shortcut, last = (suffix(names[i]) for i in (0, 3, 4, 5, -1))
    assert first.cut == ("input",)
    # in the graph onnxruntime runs, block2's residual Add is fused into conv2, which accumulates into
    # the strided shortcut's output: each suffix takes two of {block input, conv1 out, shortcut out}
    assert len(conv1.cut) == len(conv2.cut) == len(shortcut.cut) == 2
    block_input, shortcut_out, conv1_out = (
        set(a.cut) & set(b.cut) for a, b in ((conv1, shortcut), (conv1, conv2), (conv2, shortcut))
    )
    assert len(block_input | shortcut_out | conv1_out) == 3
    lengths = [len(onnx.load_from_string(s.model or b"").graph.node) for s in (first, conv1, conv2, last)]
    assert lengths == sorted(lengths, reverse=True) and lengths[-1] < lengths[0]  # deeper, shorter
    maps = suffixes._weight_maps()  # the probe followed every probed weight through the optimiser
    assert maps.covered and maps.covered == set(maps.offsets)
    unchanged = suffixes.cell({}, {})
    assert unchanged.model is None  # nothing changed: the cell is the golden run


def _largest_tensor_onnxruntime_writes(path: Path, sample: dict[str, np.ndarray]) -> int:
    """Every node output made a graph output, optimizations off, one sample: the largest array's bytes."""
    model = onnx.load(str(path))
    known = {value.name for value in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in known:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
                known.add(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return max(np.asarray(value).nbytes for value in session.run(None, sample))


@pytest.mark.parametrize("model", ["residual_cnn", "transformer"])
def test_the_largest_activation_is_the_largest_tensor_onnxruntime_writes(
    model: str, request: pytest.FixtureRequest
) -> None:
    path, feeds = request.getfixturevalue(model)
    handle = open_compressible(path, "onnx", intra_op_threads=1)
    assert handle.largest_activation_bytes is None  # learnt when prepared
    handle.prepare(first_sample(feeds))
    assert handle.largest_activation_bytes == _largest_tensor_onnxruntime_writes(path, first_sample(feeds))


@pytest.mark.parametrize(
    ("largest", "batch"),
    [
        (None, SCAN_BATCH_CAP),  # unknown (torch models): the former default
        (262_144, SCAN_BATCH_CAP),  # the ResNet-18 shape at 64 px: 160 would fit, the cap holds
        (4_816_896, 8),  # EfficientNet-Lite0 at 224 px: 96 x 112 x 112 float32
        (SCAN_BATCH_ACTIVATION_BYTES // 3, 3),
        (SCAN_BATCH_ACTIVATION_BYTES // 3 + 1, 2),
        (SCAN_BATCH_ACTIVATION_BYTES * 4, 1),  # one sample over the budget still runs
    ],
)
def test_the_batch_keeps_its_largest_tensor_within_the_budget(largest: int | None, batch: int) -> None:
    model = cast(Any, SimpleNamespace(largest_activation_bytes=largest))
    assert scan_batch_size(model) == batch
    if largest is not None and batch > 1:
        assert batch * largest <= SCAN_BATCH_ACTIVATION_BYTES or batch == SCAN_BATCH_CAP


def test_the_default_batch_scan_equals_the_full_rerun(
    residual_cnn: tuple[Path, dict[str, np.ndarray]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget that gives the residual CNN batches of 3 (40 samples: the last batch holds 1): every cell
    of the default scan equals the full re-run's, whose golden outputs and metrics fold in the same batches."""
    path, feeds = residual_cnn
    handle = open_compressible(path, "onnx", intra_op_threads=1)
    handle.prepare(first_sample(feeds))
    assert handle.largest_activation_bytes is not None
    monkeypatch.setattr(sensitivity, "SCAN_BATCH_ACTIVATION_BYTES", 3 * handle.largest_activation_bytes + 1)
    assert scan_batch_size(handle) == 3
    fast = layer_sensitivity(handle, feeds, CONFIGS)
    full = layer_sensitivity(
        open_compressible(path, "onnx", intra_op_threads=1), feeds, CONFIGS, batch_size=3, reuse_prefix=False
    )
    _assert_same_cells(fast, full)
    assert fast.batch_size == 3 and fast.to_dict()["batch_size"] == 3
