"""Tiny task models for the job tests (random weights, no training: the tests compare what the job stores with
what the two exported files compute) and the golden/compressed ONNX pair they are compared as."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.formats.exporters import export_onnx


class TinySegmenter(torch.nn.Module):
    """(N, 1, H, W) pictures → (N, 3, H, W) class logits."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.head = torch.nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv1(x)))


class TinyPictureModel(torch.nn.Module):
    """(N, 1, H, W) pictures in [0, 1] → (N, 1, H, W) pictures in (0, 1): an image-output model."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.head = torch.nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.head(torch.relu(self.conv1(x))))


class TinyWaveModel(torch.nn.Module):
    """(N, 1, T) waveforms → (N, 1, T) waveforms (a residual denoiser's shape): a signal model."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv1d(1, 8, 9, padding=4)
        self.head = torch.nn.Conv1d(8, 1, 9, padding=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.head(torch.relu(self.conv1(x)))


def golden_and_3bit_pair(
    model: torch.nn.Module,
    sample: np.ndarray,
    folder: Path,
    *,
    input_name: str = "input",
    output_name: str = "logits",
    std: float = 0.5,
) -> tuple[Path, Path]:
    """`model` with seeded normal(0, std) weights exported as the golden ONNX file, and its copy with 3-bit
    weights on conv1 and head as the compressed one."""
    torch.manual_seed(0)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=std)
    copy = compress_module(model.eval(), {n: WeightQuant(3) for n in ("conv1", "head")})[0].eval()
    golden = export_onnx(model.eval(), sample[:2], folder / "golden.onnx", input_name, output_name)
    compressed = export_onnx(copy, sample[:2], folder / "compressed.onnx", input_name, output_name)
    return golden, compressed
