"""A small language model whose head is tied to its embedding table (embedding, attention, a
bidirectional GRU, a 1x1 conv), and a batch of tokens for it: a model with one tensor shared by two layers
and a layer of every supported type."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


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
