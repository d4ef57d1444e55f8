"""A deep residual MLP whose layers differ in sensitivity, exported to ONNX (screening tests and bench).

`blocks` residual blocks x + s_i · fc2(relu(fc1(x))) and a 10-class head: 2 · blocks + 1 Linear layers.
Each block draws its branch scale s_i log-uniformly over two decades and each Linear a few outlier input
columns (weights 3-10x the rest; scales shrink past 60 blocks), so that quantization error, and how much of it reaches the output,
differ from layer to layer (with uniform initialisation every layer of the bench's 500-layer MLP is about
equally sensitive, and a ranking of them is mostly noise)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def varied_mlp_onnx(
    folder: Path, blocks: int = 60, width: int = 32, samples: int = 64, seed: int = 0
) -> tuple[Path, np.ndarray]:
    import torch
    from torch import nn

    from worker.demo.models import export_onnx

    generator = torch.Generator().manual_seed(seed)

    class Residual(nn.Module):
        def __init__(self, scale: float) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(width, width), nn.Linear(width, width)
            self.scale = scale

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.scale * self.fc2(torch.relu(self.fc1(x)))

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    # past 60 blocks the scales shrink as 60 / blocks, so the stream grows about as much as over 60 blocks
    # (unscaled, 250 blocks put the logits at 5e6: every probability one-hot and every W8 cell's KL 0)
    damp = min(1.0, 60 / blocks)
    layers: list[nn.Module] = [Residual(damp * float(10 ** rng.uniform(-2, 0))) for _ in range(blocks)]
    head = nn.Linear(width, 10)
    with torch.no_grad():
        for linear in [m for m in [*layers, head] for m in m.modules() if isinstance(m, nn.Linear)]:
            columns = torch.randperm(width, generator=generator)[: int(rng.integers(1, 4))]
            linear.weight[:, columns] *= float(rng.uniform(3, 10))
    model = nn.Sequential(*layers, head).eval()
    x = rng.standard_normal((samples, width)).astype(np.float32)
    with torch.inference_mode():
        path = export_onnx(model, x[:2], folder / "varied_mlp.onnx")
    return path, x
