"""The comparison's batch follows the golden model's activations (worker/engine/fidelity/batching.py, issue 32):
the largest activation from ONNX shape inference equals the largest tensor torch's own forward hooks see at
one sample, and the batch keeps it within the budget without exceeding what the job asked for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from worker.demo.models import export_onnx
from worker.engine.fidelity.batching import (
    ACTIVATION_BUDGET_BYTES,
    memory_batch_size,
    onnx_largest_activation_bytes,
)


class Wide(torch.nn.Module):
    """A stem that widens 3 -> 48 channels at 64 x 64 (a big early activation), then shrinks."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 48, 3, padding=1)
        self.act = torch.nn.ReLU()
        self.down = torch.nn.Conv2d(48, 8, 3, stride=4, padding=1)
        self.head = torch.nn.Linear(8 * 16 * 16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.down(self.act(self.stem(x))).flatten(1))


def test_the_largest_activation_is_what_torch_writes(tmp_path: Path) -> None:
    model = Wide().eval()
    x = np.random.default_rng(0).random((4, 3, 64, 64), dtype=np.float32)
    path = export_onnx(model, x[:1], tmp_path / "wide.onnx")
    seen: list[int] = []
    hooks = [
        m.register_forward_hook(lambda _m, _i, out: seen.append(out.numel() * out.element_size()))
        for m in model.modules()
        if not list(m.children())
    ]
    with torch.inference_mode():
        model(torch.from_numpy(x[:1]))
    for hook in hooks:
        hook.remove()
    expected = max(seen)
    assert expected == 48 * 64 * 64 * 4
    assert onnx_largest_activation_bytes(path, {"input": x}) == expected


def test_the_batch_keeps_the_largest_activation_within_the_budget() -> None:
    per_sample = 4_816_896  # EfficientNet-Lite0 at 224 px: 96 x 112 x 112 float32
    batch = memory_batch_size(64, per_sample)
    assert batch == 8 and batch * per_sample <= ACTIVATION_BUDGET_BYTES < (batch + 1) * per_sample
    assert memory_batch_size(64, 1024) == 64  # small activations: what the job asked for
    assert memory_batch_size(64, None) == 64  # unknown: what the job asked for
    assert memory_batch_size(64, ACTIVATION_BUDGET_BYTES * 3) == 1  # one sample at least
