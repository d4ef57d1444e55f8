"""Compression configs and tensor math against independent references (numpy, torch.nn.utils.prune)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.utils import prune

from worker.engine.compression import (
    ActivationQuant,
    ChannelPrune,
    CompressionConfigError,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NoiseInjection,
    Quantize,
    Schedule,
    WeightQuant,
    as_compressible,
    compress_layer,
    compress_module,
    config_from_dict,
    ops,
)
from worker.engine.compression.model import Calibration
from worker.engine.errors import EngineError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


ALL_CONFIGS: list[Any] = [
    WeightQuant(8),
    WeightQuant(4, symmetric=False, per_channel=True),
    ActivationQuant(8),
    ActivationQuant(6, "percentile", 99.9),
    ActivationQuant(4, "mse"),
    FloatCast("fp16"),
    FloatCast("bf16"),
    Quantize(WeightQuant(8, per_channel=True), ActivationQuant(8)),
    Quantize(activations=ActivationQuant(8)),
    MagnitudePrune(0.5),
    ChannelPrune(0.25, "l2"),
    LowRank(0.5),
    NoiseInjection(4, seed=3),
    Schedule((MagnitudePrune(0.3), Quantize(WeightQuant(4), ActivationQuant(8)))),
]


# ------------------------------------------------------------------------------------------ configs


def test_ids_are_stable_and_distinct() -> None:
    expected = [
        "w8-sym-tensor",
        "w4-asym-channel",
        "a8-minmax",
        "a6-p99.9",
        "a4-mse",
        "fp16",
        "bf16",
        "w8-sym-channel+a8-minmax",
        "a8-minmax",
        "prune-u0.5",
        "prune-ch0.25-l2",
        "lowrank-0.5",
        "noise-w4-s3",
        "prune-u0.3>w4-sym-tensor+a8-minmax",
    ]
    assert [c.id for c in ALL_CONFIGS] == expected


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=lambda c: c.id)
def test_configs_round_trip_through_json(config: Any) -> None:
    data = json.loads(json.dumps(config.to_dict()))
    back = config_from_dict(data)
    assert back == config
    assert back.id == config.id


@pytest.mark.parametrize(
    ("make", "field", "allowed"),
    [
        (lambda: WeightQuant(bits=1), "WeightQuant.bits", "from 2 to 16"),
        (lambda: WeightQuant(bits=17), "WeightQuant.bits", "from 2 to 16"),
        (
            lambda: WeightQuant(bits=8.0),  # type: ignore[arg-type]
            "WeightQuant.bits",
            "integer",
        ),
        (
            lambda: WeightQuant(symmetric="yes"),  # type: ignore[arg-type]
            "WeightQuant.symmetric",
            "true or false",
        ),
        (lambda: ActivationQuant(bits=3), "ActivationQuant.bits", "from 4 to 16"),
        (
            lambda: ActivationQuant(calibration="kl"),  # type: ignore[arg-type]
            "ActivationQuant.calibration",
            "'minmax'",
        ),
        (lambda: ActivationQuant(8, "percentile", 40.0), "ActivationQuant.percentile", "(50, 100]"),
        (lambda: ActivationQuant(8, "minmax", 99.0), "ActivationQuant.percentile", "percentile"),
        (
            lambda: FloatCast("fp8"),  # type: ignore[arg-type]
            "FloatCast.dtype",
            "'fp16'",
        ),
        (lambda: MagnitudePrune(1.5), "MagnitudePrune.sparsity", "[0, 1]"),
        (lambda: MagnitudePrune(float("nan")), "MagnitudePrune.sparsity", "[0, 1]"),
        (
            lambda: ChannelPrune(0.5, "l3"),  # type: ignore[arg-type]
            "ChannelPrune.norm",
            "'l1'",
        ),
        (lambda: LowRank(0.0), "LowRank.rank_ratio", "(0, 1]"),
        (lambda: NoiseInjection(bits=0), "NoiseInjection.bits", "from 2 to 16"),
        (lambda: Schedule(()), "Schedule.stages", "non-empty"),
        (lambda: config_from_dict({"type": "weight_quant", "bitz": 4}), "WeightQuant has no field", "bitz"),
        (lambda: config_from_dict({"type": "int3"}), "config.type", "weight_quant"),
        (lambda: config_from_dict({"type": "weight_quant", "bits": 40}), "WeightQuant.bits", "from 2 to 16"),
    ],
)
def test_invalid_configs_name_the_field_and_the_range(make: Any, field: str, allowed: str) -> None:
    with pytest.raises(CompressionConfigError) as info:
        make()
    assert field in str(info.value)
    assert allowed in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, EngineError)


def test_percentile_defaults_and_quantize_needs_a_part() -> None:
    assert ActivationQuant(8, "percentile").percentile == 99.99
    with pytest.raises(CompressionConfigError, match="Quantize needs"):
        Quantize()


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


# ------------------------------------------------------------------------------------- activations


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def _tiny() -> tuple[_Tiny, dict[str, np.ndarray]]:
    torch.manual_seed(4)
    rng = np.random.default_rng(4)
    x = rng.laplace(size=(512, 8)).astype(np.float32)
    x[:2] *= 60.0  # two outlier samples: where percentile and MSE calibration matter
    return _Tiny().eval(), {"x": x}


def _fc1_output(model: _Tiny, feeds: dict[str, np.ndarray]) -> np.ndarray:
    with torch.no_grad():
        return model.fc1(torch.from_numpy(feeds["x"])).numpy()


def test_activation_ranges_follow_their_calibration_method() -> None:
    model, feeds = _tiny()
    handle = as_compressible(model)
    handle.prepare({"x": feeds["x"][:1]})
    calibration = Calibration(handle, feeds, batch_size=100)
    calibration.ensure(["fc1"], histogram=True)
    stats = calibration.stats("fc1", "0")
    acts = _fc1_output(model, feeds)
    assert stats.lo == float(acts.min()) and stats.hi == float(acts.max())
    minmax = ops.activation_qparams(stats, ActivationQuant(8))
    assert (minmax.lo, minmax.hi) == (min(float(acts.min()), 0.0), max(float(acts.max()), 0.0))
    percentile = ops.activation_qparams(stats, ActivationQuant(8, "percentile", 99.0))
    bin_width = (stats.hi - stats.lo) / ops.HISTOGRAM_BINS
    assert abs(percentile.hi - np.percentile(acts, 99.0)) <= 2 * bin_width
    assert abs(percentile.lo - min(np.percentile(acts, 1.0), 0.0)) <= 2 * bin_width


def test_mse_calibration_finds_the_best_clipping_range() -> None:
    rng = np.random.default_rng(5)
    acts = np.concatenate([rng.laplace(size=100_000), [-150.0, 180.0, 200.0]]).astype(np.float32)
    stats = ops.ActivationStats()
    stats.update_range(acts[:50_000])
    stats.update_range(acts[50_000:])
    stats.update_histogram(acts[:50_000])
    stats.update_histogram(acts[50_000:])
    t = torch.from_numpy(acts)

    def real_mse(lo: float, hi: float) -> float:
        q = ops._qparams_for_range(lo, hi, 4)
        return float(((q.apply(t) - t) ** 2).mean())

    chosen = ops.activation_qparams(stats, ActivationQuant(4, "mse"))
    wide = ops.activation_qparams(stats, ActivationQuant(4))
    best = min(real_mse(-150.0 * k / 200, 200.0 * k / 200) for k in range(1, 201))
    assert real_mse(chosen.lo, chosen.hi) < 0.6 * real_mse(wide.lo, wide.hi)
    assert real_mse(chosen.lo, chosen.hi) <= 1.05 * best


def test_activation_fake_quant_is_applied_to_the_layer_output_only() -> None:
    model, feeds = _tiny()
    quantized, _ = compress_layer(model, "fc1", ActivationQuant(4), feeds)
    x = torch.from_numpy(feeds["x"][:50])
    with torch.no_grad():
        hidden = model.fc1(x)
        lo, hi = min(float(_fc1_output(model, feeds).min()), 0.0), float(_fc1_output(model, feeds).max())
        scale = np.float32((hi - lo) / 15)
        zero = round(-lo / float(scale))
        q = np.clip(np.round(hidden.numpy() * (np.float32(1) / scale)) + zero, 0, 15)
        expected_hidden = ((q - zero) * scale).astype(np.float32)
        expected = model.fc2(torch.relu(torch.from_numpy(expected_hidden))).numpy()
        got = quantized(x).numpy()
        plain = model(x).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert not np.allclose(got, plain, atol=1e-3)


def test_compress_module_leaves_the_original_alone_and_needs_data_for_activations() -> None:
    model, _ = _tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    compressed: Any
    compressed, outcome = compress_module(model, {"fc1": WeightQuant(2), "fc2": MagnitudePrune(0.5)})
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key])
    assert not torch.equal(compressed.fc1.weight, model.fc1.weight)
    assert outcome.changed == {"fc1": ["fc1.weight"], "fc2": ["fc2.weight"]}
    with pytest.raises(EngineError, match="calibration data"):
        compress_module(model, {"fc1": ActivationQuant(8)})
    with pytest.raises(EngineError, match="not a compressible layer"):
        compress_module(model, {"fc9": WeightQuant(8)})


# ----------------------------------------------------------------------------------- shared weights


class TiedLM(nn.Module):
    """Embedding → attention → bidirectional GRU → 1x1 conv → head tied to the embedding table."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.gru = nn.GRU(16, 16, batch_first=True, bidirectional=True)
        self.proj = nn.Conv1d(32, 16, 1)
        self.head = nn.Linear(16, 20, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.emb(tokens)
        x, _ = self.attn(x, x, x)
        x, _ = self.gru(x)
        x = self.proj(x.transpose(1, 2)).transpose(1, 2)
        return self.head(x.mean(1))


def tied_model() -> tuple[TiedLM, dict[str, np.ndarray]]:
    torch.manual_seed(0)
    tokens = np.random.default_rng(0).integers(0, 20, size=(64, 6))
    return TiedLM().eval(), {"tokens": tokens}


def test_layers_of_every_supported_type_are_found_with_metadata() -> None:
    model, feeds = tied_model()
    handle = as_compressible(model)
    handle.prepare({"tokens": feeds["tokens"][:1]})
    layers = {layer.name: layer.to_dict() for layer in handle.layers()}
    assert list(layers) == ["emb", "attn", "gru", "proj", "head"]  # call order
    assert [layers[n]["type"] for n in layers] == [
        "Embedding",
        "MultiheadAttention",
        "GRU",
        "Conv1d",
        "Linear",
    ]
    assert layers["attn"]["tensors"] == [
        "attn.in_proj_weight",
        "attn.out_proj.weight",
        "attn.in_proj_bias",
        "attn.out_proj.bias",
    ]
    assert layers["gru"]["params"] == sum(p.numel() for p in model.gru.parameters())
    assert layers["emb"]["params"] == 320 and layers["head"]["params"] == 0  # the tied table counts once
    assert layers["emb"]["shared_with"] == ["head"] and layers["head"]["shared_with"] == ["emb"]
    assert any("shared" in note for note in layers["head"]["notes"])
    assert [layers[n]["depth_fraction"] for n in layers] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert layers["proj"]["macs"] == 6 * 32 * 16 and layers["emb"]["macs"] == 0


def test_a_shared_tensor_is_compressed_once_and_reported() -> None:
    model, _ = tied_model()
    compressed: Any
    compressed, outcome = compress_module(model, {"emb": NoiseInjection(4), "head": NoiseInjection(4)})
    assert compressed.emb.weight is compressed.head.weight
    noise = (compressed.emb.weight - model.emb.weight).detach().double()
    step = float(model.emb.weight.abs().max()) / 7
    assert float(noise.abs().max()) <= step / 2 + 1e-6  # noise added twice could reach a whole step
    assert outcome.changed == {"emb": ["emb.weight"], "head": []}
    assert any("already compressed" in note for note in outcome.notes)
    only_head: Any
    only_head, head_outcome = compress_layer(model, "head", WeightQuant(3))
    assert not torch.equal(only_head.emb.weight, model.emb.weight)
    assert head_outcome.affected_layers == {"head": ["emb"]}
