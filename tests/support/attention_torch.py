"""A small torch transformer encoder for the attention-map tests (issue 13, torch side), with one block of each
attention form the engine reads:

- block 0 writes attention by hand: softmax(q k^T / sqrt(d)) over [N, heads, Tq, Tk];
- block 1 is nn.TransformerEncoderLayer (its attention exports as fused scaled_dot_product_attention);
- block 2 is nn.MultiheadAttention called with need_weights=True (a 3-D [N * heads, Tq, Tk] softmax).

`numpy_attention` recomputes every block's attention probabilities from the module's weights in float64
numpy (an independent re-implementation: LayerNorm, ReLU feed-forward, masked softmax), and
`round_weights` makes the "compressed" copy: every weight matrix rounded to a symmetric 4-bit per-tensor
grid (15 levels, scale max|w| / 7) in numpy. `scipy_divergences` is the reference KL / JS of two models'
maps (any format's), from scipy."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import torch
from scipy.spatial.distance import jensenshannon
from scipy.special import rel_entr
from torch import nn

from worker.demo.models import DigitsCNN

DIM, HEADS, FFN, TOKENS = 16, 4, 32, 6


class ManualAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.out = nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        n, t, d = x.shape
        q, k, v = (a.view(n, t, HEADS, d // HEADS).transpose(1, 2) for a in self.qkv(x).chunk(3, dim=-1))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d // HEADS)
        scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
        context = torch.softmax(scores, dim=-1) @ v
        return x + self.out(context.transpose(1, 2).reshape(n, t, d))


class TinyEncoder(nn.Module):
    """Inputs x [N, T, DIM] float32 and attention_mask [N, T] int64 (1 = token, 0 = padding)."""

    def __init__(self) -> None:
        super().__init__()
        self.manual = ManualAttention()
        self.layer = nn.TransformerEncoderLayer(DIM, HEADS, FFN, dropout=0.0, batch_first=True)
        self.mha = nn.MultiheadAttention(DIM, HEADS, batch_first=True)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        keep = attention_mask != 0
        x = self.manual(x, keep)
        x = self.layer(x, src_key_padding_mask=~keep)
        out, _weights = self.mha(
            x, x, x, key_padding_mask=~keep, need_weights=True, average_attn_weights=False
        )
        return x + out


class SoftmaxCNN(DigitsCNN):
    """The digits CNN ending in a softmax over its 10 classes: a softmax, but no attention (no note, no
    document, whatever the format)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(super().forward(x), dim=-1)


def tiny_encoder(seed: int = 0) -> TinyEncoder:
    torch.manual_seed(seed)
    model = TinyEncoder().eval()
    with torch.no_grad():  # larger weights than the default init: attention that is far from uniform
        for param in model.parameters():
            if param.ndim == 2:
                param.mul_(2.0)
    return model


def round_weights(model: TinyEncoder, bits: int = 4) -> TinyEncoder:
    """A copy whose weight matrices are rounded to a symmetric per-tensor grid of 2^bits - 1 levels."""
    rounded = tiny_encoder()
    levels = 2 ** (bits - 1) - 1
    state = {}
    for name, value in model.state_dict().items():
        w = value.numpy().astype(np.float64)
        if w.ndim == 2:
            scale = np.abs(w).max() / levels
            w = np.round(w / scale) * scale
        state[name] = torch.from_numpy(w.astype(np.float32))
    rounded.load_state_dict(state)
    return rounded.eval()


def export_encoder(model: TinyEncoder, path: Path) -> Path:
    """torch.export with a dynamic batch (the engine's first batch is one sample), saved as .pt2."""
    x, mask = sample_inputs(2, seed=99)
    batch = torch.export.Dim("batch", min=1, max=4096)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(
            model,
            (torch.from_numpy(x), torch.from_numpy(mask)),
            dynamic_shapes={"x": {0: batch}, "attention_mask": {0: batch}},
        )
    torch.export.save(program, str(path))
    return path


def sample_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """x [n, TOKENS, DIM] and an attention mask whose lengths vary from 2 to TOKENS tokens."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, TOKENS, DIM)).astype(np.float32)
    lengths = rng.integers(2, TOKENS + 1, size=n)
    lengths[0] = TOKENS
    mask = (np.arange(TOKENS)[None, :] < lengths[:, None]).astype(np.int64)
    return x, mask


# --- the numpy reference ------------------------------------------------------------------------------


def _softmax(scores: np.ndarray) -> np.ndarray:
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def _heads(a: np.ndarray) -> np.ndarray:
    n, t, d = a.shape
    return a.reshape(n, t, HEADS, d // HEADS).transpose(0, 2, 1, 3)


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities [N, H, T, T], context [N, T, D]) of multi-head attention, padded keys left out."""
    q, k, v = _heads(q), _heads(k), _heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    scores = np.where(keep[:, None, None, :], scores, -np.inf)
    probs = _softmax(scores)
    context = (probs @ v).transpose(0, 2, 1, 3)
    return probs, context.reshape(context.shape[0], context.shape[1], -1)


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def numpy_attention(model: TinyEncoder, x: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
    """Each block's attention probabilities [N, HEADS, T, T] in float64, from the weights alone."""
    w = {name: value.double().numpy() for name, value in model.state_dict().items()}
    keep = mask != 0
    h = x.astype(np.float64)

    def linear(a: np.ndarray, name: str) -> np.ndarray:
        return a @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    def in_proj(a: np.ndarray, prefix: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        qkv = a @ w[f"{prefix}.in_proj_weight"].T + w[f"{prefix}.in_proj_bias"]
        q, k, v = np.split(qkv, 3, axis=-1)
        return q, k, v

    maps = []
    q, k, v = np.split(linear(h, "manual.qkv"), 3, axis=-1)
    probs, context = _attend(q, k, v, keep)
    maps.append(probs)
    h = h + linear(context, "manual.out")

    probs, context = _attend(*in_proj(h, "layer.self_attn"), keep)
    maps.append(probs)
    h = _layer_norm(
        h + linear(context, "layer.self_attn.out_proj"), w["layer.norm1.weight"], w["layer.norm1.bias"]
    )
    ff = linear(np.maximum(linear(h, "layer.linear1"), 0.0), "layer.linear2")
    h = _layer_norm(h + ff, w["layer.norm2.weight"], w["layer.norm2.bias"])

    probs, _ = _attend(*in_proj(h, "mha"), keep)
    maps.append(probs)
    return maps


def scipy_divergences(
    p_maps: list[np.ndarray], q_maps: list[np.ndarray], keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """[layers, heads] mean KL (scipy's rel_entr) and JS (scipy's jensenshannon squared: nats) between the
    golden maps p and the compressed maps q [N, heads, Tq, Tk], over the (sample, query) positions keep
    [N, Tq] marks."""
    kl, js = [], []
    for p, q in zip(p_maps, q_maps, strict=True):
        heads = range(p.shape[1])
        kl.append([rel_entr(p[:, h], q[:, h]).sum(axis=-1)[keep].mean() for h in heads])
        js.append([(jensenshannon(p[:, h], q[:, h], axis=-1) ** 2)[keep].mean() for h in heads])
    return np.array(kl), np.array(js)
