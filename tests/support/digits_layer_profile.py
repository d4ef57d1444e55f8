"""The digits CNN's files a layer profile compares (fp32, int8 QDQ, one layer perturbed; ONNX and
torch.export), and what the layer-profile tests read from them: batches of a dataset, a reference SQNR, a
profile's layers by name."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from worker.demo.models import DigitsCNN
from worker.engine.layer_profile import LayerProfile


@dataclass(frozen=True)
class Models:
    golden_onnx: Path
    int8_onnx: Path
    perturbed_onnx: Path
    golden_pt2: Path
    perturbed_pt2: Path
    golden: DigitsCNN
    perturbed: DigitsCNN


def perturb_conv2(model: DigitsCNN, scale: float = 0.3) -> DigitsCNN:
    """A copy of `model` with Gaussian noise (scale x the weights' std) added to conv2's weights only."""
    noisy = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        weight = noisy.conv2.weight
        weight += scale * weight.std() * torch.randn(weight.shape, generator=generator)
    return noisy


def batches(x: np.ndarray, size: int) -> Iterator[dict[str, np.ndarray]]:
    return ({"input": x[i : i + size]} for i in range(0, len(x), size))


def sqnr(a: np.ndarray, b: np.ndarray) -> float:
    """Reference SQNR in dB over all elements, in float64 (inf for a zero error)."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    error = float(np.sum((a64 - b64) ** 2))
    return math.inf if error == 0 else 10 * math.log10(float(np.sum(a64**2)) / error)


def by_name(profile: LayerProfile) -> dict[str, dict]:
    return {layer["name"]: layer for layer in profile.to_dict()["layers"]}
