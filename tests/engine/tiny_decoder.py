"""A tiny GPT-style causal LM for the generation tests, trained in the test on text shipped inside an installed
package (numpy's docstrings), and exported to ONNX the way the Hugging Face exporters lay a decoder out:
`input_ids`, `attention_mask`, `position_ids` (and `past_key_values.<i>.key|value` in, `present.<i>.key|value`
out, shaped (batch, heads, sequence, head size), for the export with a KV cache); `logits` (batch, sequence, V).

Characters are the tokens (a vocabulary of a few dozen), so a test can decode without a tokenizer file.
"""

from __future__ import annotations

import inspect
import math
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

HEADS, WIDTH, LAYERS, CONTEXT = 2, 32, 2, 96


def corpus() -> str:
    """Docstrings of numpy's top-level functions: plain English text every test machine has."""
    import numpy

    texts = [
        inspect.getdoc(getattr(numpy, name)) or "" for name in ("mean", "sum", "reshape", "argmax", "sort")
    ]
    text = " ".join(" ".join(t.split()) for t in texts)
    return "".join(c for c in text if c.isascii())[:6000]


class TinyDecoder(torch.nn.Module):
    """Pre-norm transformer decoder; learned positions read from `position_ids`; padded keys masked by
    `attention_mask`; the cache is the keys and values of the past positions."""

    def __init__(
        self,
        vocabulary: int,
        layers: int = LAYERS,
        width: int = WIDTH,
        heads: int = HEADS,
        context: int = CONTEXT,
    ) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocabulary, width)
        self.position = torch.nn.Embedding(context, width)
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(width) for _ in range(2 * layers))
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(width, 3 * width) for _ in range(layers))
        self.out = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(layers))
        self.up = torch.nn.ModuleList(torch.nn.Linear(width, 4 * width) for _ in range(layers))
        self.down = torch.nn.ModuleList(torch.nn.Linear(4 * width, width) for _ in range(layers))
        self.final = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocabulary)
        self.layers, self.width, self.heads = layers, width, heads

    def step(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        past: list[torch.Tensor],
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        batch, new = ids.shape
        past_len = past[0].shape[2]
        x = self.embed(ids) + self.position(positions)
        total = past_len + new
        causal = torch.arange(total)[None, :] <= (past_len + torch.arange(new))[:, None]  # (new, total)
        allowed = causal[None, None] & (mask[:, None, None, :] != 0)
        bias = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
        presents: list[torch.Tensor] = []
        size = self.width // self.heads
        for i in range(self.layers):
            q, k, v = self.qkv[i](self.norms[2 * i](x)).split(self.width, dim=-1)
            q, k, v = (t.reshape(batch, new, self.heads, size).transpose(1, 2) for t in (q, k, v))
            k = torch.cat([past[2 * i], k], dim=2)
            v = torch.cat([past[2 * i + 1], v], dim=2)
            presents += [k, v]
            weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(size) + bias, dim=-1)
            x = x + self.out[i]((weights @ v).transpose(1, 2).reshape(batch, new, self.width))
            x = x + self.down[i](F.gelu(self.up[i](self.norms[2 * i + 1](x))))
        return self.head(self.final(x)), presents

    def empty_past(self, batch: int) -> list[torch.Tensor]:
        return [torch.zeros(batch, self.heads, 0, self.width // self.heads) for _ in range(2 * self.layers)]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Plain teacher-forced logits (training and the torch reference loop)."""
        positions = torch.arange(ids.shape[1])[None].expand_as(ids)
        return self.step(ids, torch.ones_like(ids), positions, self.empty_past(ids.shape[0]))[0]


class _WithCache(torch.nn.Module):
    def __init__(self, model: TinyDecoder) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, *past: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        logits, presents = self.model.step(ids, mask, positions, list(past))
        return (logits, *presents)


class _NoCache(torch.nn.Module):
    def __init__(self, model: TinyDecoder) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return self.model.step(ids, mask, positions, self.model.empty_past(ids.shape[0]))[0]


def train(
    ids: np.ndarray, vocabulary: int, steps: int = 250, layers: int = LAYERS, seed: int = 0
) -> TinyDecoder:
    torch.manual_seed(seed)
    model = TinyDecoder(vocabulary, layers)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(seed)
    window = 32
    for _ in range(steps):
        starts = rng.integers(0, len(ids) - window - 1, 16)
        batch = torch.from_numpy(np.stack([ids[s : s + window + 1] for s in starts]))
        loss = F.cross_entropy(model(batch[:, :-1]).reshape(-1, vocabulary), batch[:, 1:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model.eval()


def export(model: TinyDecoder, path: Path, *, cache: bool) -> Path:
    """ONNX in the Hugging Face exporter layout, with or without the KV cache (legacy exporter: dynamic
    batch, sequence and past-sequence axes)."""
    ids = torch.zeros(2, 3, dtype=torch.int64)
    positions = torch.arange(3)[None].expand(2, 3).contiguous()
    names = ["input_ids", "attention_mask", "position_ids"]
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch_size", 1: "sequence_length"},
        "position_ids": {0: "batch_size", 1: "sequence_length"},
        "logits": {0: "batch_size", 1: "sequence_length"},
    }
    outputs = ["logits"]
    if cache:
        size = model.width // model.heads
        past = tuple(torch.zeros(2, model.heads, 4, size) for _ in range(2 * model.layers))
        args: tuple[torch.Tensor, ...] = (ids, torch.ones(2, 7, dtype=torch.int64), positions + 4, *past)
        for i in range(model.layers):
            for part in ("key", "value"):
                names.append(f"past_key_values.{i}.{part}")
                outputs.append(f"present.{i}.{part}")
                axes[names[-1]] = {0: "batch_size", 2: "past_sequence_length"}
                axes[outputs[-1]] = {0: "batch_size", 2: "total_sequence_length"}
        axes["attention_mask"] = {0: "batch_size", 1: "total_sequence_length"}
        module: torch.nn.Module = _WithCache(model)
    else:
        args = (ids, torch.ones(2, 3, dtype=torch.int64), positions)
        axes["attention_mask"] = {0: "batch_size", 1: "sequence_length"}
        module = _NoCache(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            args,
            str(path),
            input_names=names,
            output_names=outputs,
            dynamic_axes=axes,
            dynamo=False,
            opset_version=17,
        )
    return path


def reference_greedy(model: TinyDecoder, prompt: np.ndarray, new_tokens: int) -> list[int]:
    """The plainest loop: the whole sequence through torch each step, argmax of the last position."""
    tokens = [int(t) for t in prompt]
    with torch.inference_mode():
        for _ in range(new_tokens):
            logits = model(torch.tensor([tokens]))
            tokens.append(int(logits[0, -1].argmax()))
    return tokens[len(prompt) :]


def char_tokenizer(chars: list[str]) -> str:
    """A Hugging Face tokenizer.json whose tokens are the characters (ids = positions in `chars`)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({c: i for i, c in enumerate(chars)}, unk_token=chars[0]))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return str(tokenizer.to_str())


def quantized(model: TinyDecoder, bits: int = 4) -> TinyDecoder:
    """A copy with every Linear's weights fake-quantized (per-channel symmetric, the engine's WeightQuant)."""
    from worker.engine.compression import compress_module
    from worker.engine.compression.configs import WeightQuant

    names = [name for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)]
    copy = compress_module(model, {name: WeightQuant(bits) for name in names})[0]
    return copy.eval()  # type: ignore[return-value]
