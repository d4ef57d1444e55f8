"""compress_module on small torch models: activation ranges follow their calibration method (MSE
finds the best clipping range), activation fake quantization applies to the layer's output only, the
original model is left alone; layers of every supported type are found with their metadata, and a tensor
shared by two layers is compressed once and reported."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from tests.support.tied_lm import tied_model
from worker.engine.compression import (
    ActivationQuant,
    MagnitudePrune,
    NoiseInjection,
    WeightQuant,
    as_compressible,
    compress_layer,
    compress_module,
    ops,
)
from worker.engine.compression.model import Calibration
from worker.engine.errors import EngineError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
