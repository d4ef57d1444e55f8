"""Group-wise weight quantization (issue 31: 4-bit LLM weights as GPTQ, AWQ and onnxruntime's MatMulNBits lay
them out): each output channel's weights, flattened in order, cut into groups with one scale each. Checked
against a numpy quantizer written here, on Linear, convolution and ONNX MatMul ([K, N], channels on axis 1)
layouts, a last group shorter than the rest included; the error falls from per tensor to per channel to
groups on weights whose rows mix small and large values; the config, its id and its size are stated."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from backend.compression_contracts import WeightQuantIn
from worker.engine.compression import as_compressible, compress_module
from worker.engine.compression.configs import WeightQuant, config_from_dict
from worker.engine.compression.ops import fake_quant_weight, fake_quant_weight_groups
from worker.engine.sweep.cost import model_cost


def _reference(w: np.ndarray, bits: int, symmetric: bool, group: int, axis: int) -> np.ndarray:
    """Plain numpy, one group at a time."""
    moved = np.moveaxis(w.astype(np.float32), axis, 0)
    rows = moved.reshape(moved.shape[0], -1)
    out = np.empty_like(rows)
    for r in range(rows.shape[0]):
        for start in range(0, rows.shape[1], group):
            g = rows[r, start : start + group]
            if symmetric:
                qmax = 2 ** (bits - 1) - 1
                qmin, scale, zero = -qmax, np.abs(g).max() / np.float32(qmax), 0  # float32, as torch
            else:
                qmin, qmax = 0, 2**bits - 1
                lo, hi = np.minimum(g.min(), np.float32(0)), np.maximum(g.max(), np.float32(0))
                scale = (hi - lo) / np.float32(qmax - qmin)
                zero = int(np.clip(np.round(-lo / scale), qmin, qmax))
            scale = scale if scale > 0 else np.float32(1.0)
            inverse = np.float32(1.0) / scale  # torch multiplies by the inverse scale
            q = np.clip(np.round(g * inverse) + zero, qmin, qmax)
            out[r, start : start + group] = (q - zero) * scale
    return np.moveaxis(out.reshape(moved.shape), 0, axis)


@pytest.mark.parametrize(
    ("shape", "axis", "group", "symmetric"),
    [
        ((16, 70), 0, 32, True),  # Linear [out, in]: 32 + 32 + 6
        ((16, 70), 0, 32, False),
        ((8, 3, 5, 5), 0, 16, True),  # a convolution: 75 weights a channel
        ((96, 24), 1, 32, True),  # ONNX MatMul [K, N]: groups run along K for each of the N columns
    ],
)
def test_groups_equal_a_numpy_quantizer(
    shape: tuple[int, ...], axis: int, group: int, symmetric: bool
) -> None:
    w = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    got = fake_quant_weight_groups(torch.from_numpy(w), 4, symmetric, group, axis).numpy()
    want = _reference(w, 4, symmetric, group, axis)
    assert got.shape == w.shape
    assert np.array_equal(got, want)


def test_groups_beat_channels_beat_the_tensor_on_rows_of_mixed_scale() -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((32, 256)).astype(np.float32)
    w[:, :16] *= 20  # an outlier run at the start of every row, as LLM weights have
    x = torch.from_numpy(w)

    def mse(q: torch.Tensor) -> float:
        return float(((q - x) ** 2).mean())

    tensor = mse(fake_quant_weight(x, 4, True, per_channel=False))
    channel = mse(fake_quant_weight(x, 4, True, per_channel=True))
    groups = mse(fake_quant_weight_groups(x, 4, True, 32))
    assert groups < channel / 3 and channel <= tensor  # measured: 0.24 against 1.06


def test_the_config_and_its_contract() -> None:
    config = config_from_dict({"type": "weight_quant", "bits": 4, "group_size": 64})
    assert isinstance(config, WeightQuant) and config.id == "w4-sym-g64"
    assert config.to_dict()["group_size"] == 64 and "group_size" not in WeightQuant(4).to_dict()
    assert WeightQuantIn(bits=4, group_size=64).group_size == 64
    with pytest.raises(ValueError, match="group_size"):
        WeightQuant(4, group_size=1)


def test_a_compressed_module_holds_the_grouped_weights_and_the_cost_counts_their_scales() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(70, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    config = WeightQuant(4, group_size=32)
    copy, _ = compress_module(model, {"0": config})
    want = fake_quant_weight_groups(model[0].weight, 4, True, 32)
    assert torch.equal(copy[0].weight, want) and not torch.equal(copy[0].weight, model[0].weight)
    cost = model_cost(as_compressible(model), {"0": config})
    weight = next(t for layer in cost.layers for t in layer.tensors if t.layer == "0" and t.role == "weight")
    assert weight.quant_param_bytes == 16 * 3 * 4  # 16 channels x 3 groups (32 + 32 + 6) x a float32 scale
    assert weight.bytes == 16 * 70 * 4 // 8
