"""A LLaMA-style causal LM (RMSNorm, rotary positions, SwiGLU feed-forward, no biases, untied head) with a KV
cache, exported to ONNX in the Hugging Face exporters' layout: `input_ids`, `attention_mask` (over past and
new positions), `position_ids`, `past_key_values.<i>.key|value` in; `logits` (batch, sequence, V) and
`present.<i>.key|value` (batch, heads, total sequence, head size) out.

Sized by `LlamaConfig`: the tests build a tiny one, bench/bench_llm.py one of 0.56 B parameters
(`LLAMA_HALF_B`, the shape of a 0.5 B chat model with full multi-head attention instead of grouped keys). Random
weights (normal, std 0.02, the Hugging Face initialiser): the bench measures cost and fidelity of compression,
which does not need a trained model, and training 0.5 B parameters here would take hours.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class LlamaConfig:
    vocabulary: int
    width: int
    layers: int
    heads: int
    ffn: int
    rope_base: float = 10000.0

    @property
    def head_size(self) -> int:
        return self.width // self.heads

    @property
    def parameters(self) -> int:
        per_layer = 4 * self.width**2 + 3 * self.width * self.ffn + 2 * self.width
        return 2 * self.vocabulary * self.width + self.layers * per_layer + self.width


LLAMA_HALF_B = LlamaConfig(vocabulary=32000, width=1280, layers=24, heads=20, ffn=3456)
"""558 M parameters, 2.23 GB of float32 weights: over protobuf's 2 GB, so its ONNX file has external data."""


class RMSNorm(torch.nn.Module):
    def __init__(self, width: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding in the LLaMA layout (the two halves of each head rotated as pairs)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class LlamaDecoder(torch.nn.Module):
    def __init__(self, config: LlamaConfig, seed: int = 0) -> None:
        super().__init__()
        c = self.config = config
        generator = torch.Generator().manual_seed(seed)
        self.embed = torch.nn.Embedding(c.vocabulary, c.width)
        self.attn_norms = torch.nn.ModuleList(RMSNorm(c.width) for _ in range(c.layers))
        self.mlp_norms = torch.nn.ModuleList(RMSNorm(c.width) for _ in range(c.layers))

        def linears(n_in: int, n_out: int) -> torch.nn.ModuleList:
            return torch.nn.ModuleList(torch.nn.Linear(n_in, n_out, bias=False) for _ in range(c.layers))

        self.q, self.k, self.v, self.o = (linears(c.width, c.width) for _ in range(4))
        self.gate, self.up = linears(c.width, c.ffn), linears(c.width, c.ffn)
        self.down = linears(c.ffn, c.width)
        self.final = RMSNorm(c.width)
        self.head = torch.nn.Linear(c.width, c.vocabulary, bias=False)
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() == 2:  # the RMSNorm gains stay 1
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.02)
        inv = 1.0 / (c.rope_base ** (torch.arange(0, c.head_size, 2, dtype=torch.float32) / c.head_size))
        self.inv_freq: torch.Tensor
        self.register_buffer("inv_freq", inv, persistent=False)

    def step(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, past: list[torch.Tensor]
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits of the new tokens `ids` (batch, new) and the cache grown by them."""
        c = self.config
        batch, new = ids.shape
        past_len = past[0].shape[2]
        total = past_len + new
        angles = positions[..., None].to(torch.float32) * self.inv_freq  # (batch, new, head/2)
        cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[:, None]  # (batch, 1, new, head)
        sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[:, None]
        causal = torch.arange(total)[None, :] <= (past_len + torch.arange(new))[:, None]
        allowed = causal[None, None] & (mask[:, None, None, :] != 0)
        bias = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
        x = self.embed(ids)
        presents: list[torch.Tensor] = []
        for i in range(c.layers):
            h = self.attn_norms[i](x)
            q, k, v = (
                proj[i](h).reshape(batch, new, c.heads, c.head_size).transpose(1, 2)
                for proj in (self.q, self.k, self.v)
            )
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
            k = torch.cat([past[2 * i], k], dim=2)
            v = torch.cat([past[2 * i + 1], v], dim=2)
            presents += [k, v]
            weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(c.head_size) + bias, dim=-1)
            x = x + self.o[i]((weights @ v).transpose(1, 2).reshape(batch, new, c.width))
            h = self.mlp_norms[i](x)
            x = x + self.down[i](torch.nn.functional.silu(self.gate[i](h)) * self.up[i](h))
        return self.head(self.final(x)), presents

    def empty_past(self, batch: int) -> list[torch.Tensor]:
        c = self.config
        return [torch.zeros(batch, c.heads, 0, c.head_size) for _ in range(2 * c.layers)]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits of whole sequences (the torch reference)."""
        positions = torch.arange(ids.shape[1])[None].expand_as(ids)
        return self.step(ids, torch.ones_like(ids), positions, self.empty_past(ids.shape[0]))[0]


class _WithCache(torch.nn.Module):
    def __init__(self, model: LlamaDecoder) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, *past: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        logits, presents = self.model.step(ids, mask, positions, list(past))
        return (logits, *presents)


def export_with_cache(model: LlamaDecoder, path: Path) -> Path:
    """The ONNX file with a KV cache (legacy exporter: dynamic batch, sequence and past axes). A model over
    2 GB is written with its weights as external data beside `path`, as the exporter does."""
    c = model.config
    ids = torch.zeros(2, 3, dtype=torch.int64)
    positions = (torch.arange(3)[None].expand(2, 3) + 4).contiguous()
    past = tuple(torch.zeros(2, c.heads, 4, c.head_size) for _ in range(2 * c.layers))
    names = ["input_ids", "attention_mask", "position_ids"]
    outputs = ["logits"]
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "position_ids": {0: "batch_size", 1: "sequence_length"},
        "attention_mask": {0: "batch_size", 1: "total_sequence_length"},
        "logits": {0: "batch_size", 1: "sequence_length"},
    }
    for i in range(c.layers):
        for part in ("key", "value"):
            names.append(f"past_key_values.{i}.{part}")
            outputs.append(f"present.{i}.{part}")
            axes[names[-1]] = {0: "batch_size", 2: "past_sequence_length"}
            axes[outputs[-1]] = {0: "batch_size", 2: "total_sequence_length"}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _WithCache(model),
            (ids, torch.ones(2, 7, dtype=torch.int64), positions, *past),
            str(path),
            input_names=names,
            output_names=outputs,
            dynamic_axes=axes,
            dynamo=False,
            opset_version=17,
        )
    return path


def reference_greedy(model: LlamaDecoder, prompt: list[int], new_tokens: int) -> list[int]:
    """Greedy continuation by re-running the whole sequence in torch each step (no cache)."""
    tokens = list(prompt)
    with torch.inference_mode():
        for _ in range(new_tokens):
            tokens.append(int(model(torch.tensor([tokens]))[0, -1].argmax()))
    return tokens[len(prompt) :]
