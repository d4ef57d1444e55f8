"""The compression's tensor math against independent references: fake quantization against a numpy
quantizer, magnitude and channel pruning against torch.nn.utils.prune (recurrent units grouped across
gates), low rank against Eckart-Young, noise injection at the power of quantization noise, float casts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.utils import prune

from worker.engine.compression import ChannelPrune, compress_layer, ops

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# ------------------------------------------------------------------------------------- tensor math


def _numpy_fake_quant(w: np.ndarray, bits: int, symmetric: bool, axis: int | None) -> np.ndarray:
    """Reference quantizer written from the definitions, per tensor (axis None) or per channel."""
    w = w.astype(np.float32)
    dims = tuple(d for d in range(w.ndim) if d != axis) if axis is not None else None
    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        scale = (np.abs(w).max(axis=dims, keepdims=True) / qmax).astype(np.float32)
        zero = np.zeros_like(scale)
        qmin = -qmax
    else:
        qmin, qmax = 0, 2**bits - 1
        lo = np.minimum(w.min(axis=dims, keepdims=True), 0)
        hi = np.maximum(w.max(axis=dims, keepdims=True), 0)
        scale = ((hi - lo) / qmax).astype(np.float32)
        zero = np.clip(np.round(-lo / scale), qmin, qmax)
    inv = (np.float32(1.0) / scale).astype(np.float32)
    q = np.clip(np.round(w * inv) + zero, qmin, qmax)
    return ((q - zero) * scale).astype(np.float32)


@pytest.mark.parametrize("bits", [2, 4, 8, 16])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("per_channel", [False, True])
def test_fake_quant_matches_a_numpy_quantizer(bits: int, symmetric: bool, per_channel: bool) -> None:
    rng = np.random.default_rng(bits)
    w = (rng.standard_normal((16, 8, 3, 3)) * rng.uniform(0.1, 2.0, (16, 1, 1, 1))).astype(np.float32)
    ours = ops.fake_quant_weight(torch.from_numpy(w), bits, symmetric, per_channel, axis=0).numpy()
    ref = _numpy_fake_quant(w, bits, symmetric, 0 if per_channel else None)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-6 * float(np.abs(w).max()))
    levels = len(np.unique(ours[0] if per_channel else ours))
    assert levels <= 2**bits


def test_magnitude_prune_matches_torch_prune() -> None:
    torch.manual_seed(0)
    layer = nn.Linear(64, 32)
    ours = ops.magnitude_prune(layer.weight.detach(), 0.37)
    prune.l1_unstructured(layer, "weight", amount=0.37)
    assert torch.equal(ours, layer.weight.detach())
    assert int((ours == 0).sum()) == round(0.37 * ours.numel())


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_channel_prune_matches_torch_ln_structured(norm: Any) -> None:
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 12, 3))
    conv = model[0]
    assert isinstance(conv, nn.Conv2d)
    pruned: Any
    pruned, outcome = compress_layer(model, "0", ChannelPrune(0.25, norm))
    prune.ln_structured(conv, "weight", amount=0.25, n=1 if norm == "l1" else 2, dim=0)
    reference = conv.weight.detach()
    got = pruned[0].weight.detach()
    assert torch.equal(got, reference)
    zeroed = [j for j in range(12) if torch.all(reference[j] == 0)]
    assert len(zeroed) == 3
    bias = pruned[0].bias.detach()
    assert all(bias[j] == 0 for j in zeroed) and all(bias[j] != 0 for j in set(range(12)) - set(zeroed))
    assert outcome.changed == {"0": ["0.weight", "0.bias"]}


def test_channel_prune_groups_recurrent_units_across_gates() -> None:
    torch.manual_seed(2)
    model = nn.Sequential(nn.LSTM(5, 6))
    pruned: Any
    pruned, _ = compress_layer(model, "0", ChannelPrune(0.5))
    lstm = pruned[0]
    w_ih, w_hh = lstm.weight_ih_l0.detach(), lstm.weight_hh_l0.detach()
    dead = [j for j in range(6) if all(torch.all(w_ih[g * 6 + j] == 0) for g in range(4))]
    assert len(dead) == 3
    for j in dead:  # a pruned unit is zero in every gate of both matrices and both biases
        for g in range(4):
            assert torch.all(w_hh[g * 6 + j] == 0)
            assert lstm.bias_ih_l0[g * 6 + j] == 0 and lstm.bias_hh_l0[g * 6 + j] == 0
    original: Any = model[0]
    scores = [
        sum(
            float(
                original.weight_ih_l0[g * 6 + j].detach().abs().sum()
                + original.weight_hh_l0[g * 6 + j].detach().abs().sum()
            )
            for g in range(4)
        )
        for j in range(6)
    ]
    assert sorted(dead) == sorted(np.argsort(scores)[:3].tolist())


@pytest.mark.parametrize("ratio", [0.1, 0.25, 0.5])
def test_low_rank_meets_eckart_young(ratio: float) -> None:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((24, 6, 3, 3)).astype(np.float32)
    ours, rank = ops.low_rank(torch.from_numpy(w), ratio)
    matrix = w.reshape(24, -1).astype(np.float64)
    singular = np.linalg.svd(matrix, compute_uv=False)
    assert rank == max(1, round(ratio * 24))
    error = np.sum((matrix - ours.numpy().reshape(24, -1).astype(np.float64)) ** 2)
    np.testing.assert_allclose(error, np.sum(singular[rank:] ** 2), rtol=1e-4)
    assert np.linalg.matrix_rank(ours.numpy().reshape(24, -1).astype(np.float64), tol=1e-3) == rank


@pytest.mark.parametrize("bits", [3, 4, 8])
def test_noise_power_equals_quantization_noise(bits: int) -> None:
    rng = np.random.default_rng(bits)
    w = torch.from_numpy(rng.uniform(-1.0, 1.0, 200_000).astype(np.float32))
    step = float(w.abs().max()) / (2 ** (bits - 1) - 1)
    noise = (ops.inject_noise(w, bits, seed=0, key="w") - w).double()
    assert abs(float(noise.mean())) < 0.02 * step
    np.testing.assert_allclose(float((noise**2).mean()), step**2 / 12, rtol=0.02)
    assert float(noise.abs().max()) <= step / 2 + 1e-7
    rounding = (ops.fake_quant_weight(w, bits, True, False) - w).double()
    np.testing.assert_allclose(float((rounding**2).mean()), float((noise**2).mean()), rtol=0.05)
    again = ops.inject_noise(w, bits, seed=0, key="w")
    other = ops.inject_noise(w, bits, seed=1, key="w")
    assert torch.equal(again, w + noise.float()) or torch.allclose(again - w, noise.float())
    assert not torch.equal(again, other)


def test_float_cast_round_trips() -> None:
    x = torch.tensor([1.0 + 2**-12, 3.14159265, 70000.0])
    assert ops.float_cast(x, "fp16").tolist() == x.half().float().tolist()
    assert ops.float_cast(x, "bf16").tolist() == x.bfloat16().float().tolist()
    assert ops.float_cast(x, "fp16")[2] == float("inf")  # fp16 overflows at 65504, as real fp16 would
