"""Small real models trained in seconds on scikit-learn's bundled digits data set.

They seed the demo project and give the engine's tests real (not mocked) golden / compressed pairs:
a float CNN exported to ONNX, its int8 QDQ quantization, and the same CNN as a torch.export program
and a TorchScript archive. Everything here runs offline: the digits data ship inside scikit-learn.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from torch import nn

# The exporters moved to worker.engine.formats.exporters; these names stay importable from here.
from worker.engine.formats.exporters import (
    export_onnx,
    export_torch_program,
    quantize_onnx_int8,
)
from worker.engine.formats.exporters import (
    export_torchscript as export_torchscript,  # re-exported, used by tests
)

logger = logging.getLogger(__name__)

DIGITS_CLASSES = 10
DIGITS_IMAGE_SIZE = 8


@dataclass(frozen=True)
class DigitsSplit:
    """The digits data split once: images (N, 1, 8, 8) float32 in [0, 1], labels int64."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class DemoBundle:
    """Files written by `write_demo_bundle`."""

    golden_onnx: Path
    int8_onnx: Path
    test_npz: Path
    test_accuracy: float
    """Top-1 accuracy of the float CNN on the test split, measured before export."""
    golden_pt2: Path
    """The same float CNN as a torch.export program: recovery jobs need a torch golden model."""


def load_digits_split(seed: int = 0, test_fraction: float = 0.2) -> DigitsSplit:
    """Load sklearn's digits, scale pixels (0..16) to [0, 1], split stratified by label."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    labels = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=test_fraction, stratify=labels, random_state=seed
    )
    return DigitsSplit(x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


class DigitsCNN(nn.Module):
    """Two 3x3 convolutions (the second one strided) and a linear classifier: about 5k parameters."""

    def __init__(self, channels: tuple[int, int] = (8, 16)) -> None:
        super().__init__()
        c1, c2 = channels
        self.conv1 = nn.Conv2d(1, c1, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, kernel_size=3, stride=2, padding=1)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(c2 * 4 * 4, DIGITS_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


class DigitsLSTM(nn.Module):
    """Reads the 8 image rows as a sequence of 8 features; classifies from the last hidden state."""

    def __init__(self, hidden: int = 48) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size=DIGITS_IMAGE_SIZE, hidden_size=hidden, batch_first=True)
        self.fc = nn.Linear(hidden, DIGITS_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(x.shape[0], DIGITS_IMAGE_SIZE, DIGITS_IMAGE_SIZE)
        _, (h_n, _) = self.lstm(rows)
        return self.fc(h_n[-1])


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    """Top-1 accuracy of `model` on numpy images `x` and labels `y`."""
    with torch.inference_mode():
        predicted = model(torch.from_numpy(x)).argmax(dim=1).numpy()
    return float((predicted == y).mean())


ModuleT = TypeVar("ModuleT", bound=nn.Module)


def _fit(
    model: ModuleT, split: DigitsSplit, *, seed: int, epochs: int, lr: float, batch_size: int = 64
) -> ModuleT:
    """Plain Adam + cross-entropy loop; shuffling uses a generator seeded with `seed`."""
    x = torch.from_numpy(split.x_train)
    y = torch.from_numpy(split.y_train)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        for start in range(0, len(x), batch_size):
            batch = order[start : start + batch_size]
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    return model


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Seed torch's global RNG for weight init without disturbing the caller's RNG state, and train on
    one intra-op thread: these models are too small to gain from more (on a busy 2-core machine, two
    threads made training 10x slower), and a fixed thread count keeps the float sums - hence the
    trained weights - the same on machines with different core counts. The caller's thread count is
    restored afterwards (torch's setting is process-wide)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
    finally:
        torch.set_num_threads(threads)


def train_digits_cnn(split: DigitsSplit, seed: int = 0, epochs: int = 12) -> DigitsCNN:
    """Train `DigitsCNN` (under a second on one core); returns it in eval mode."""
    with _seeded(seed):
        model = DigitsCNN()
        return _fit(model, split, seed=seed, epochs=epochs, lr=1e-2)


def train_digits_lstm(split: DigitsSplit, seed: int = 0, epochs: int = 25) -> DigitsLSTM:
    """Train `DigitsLSTM` (about a second on one core); returns it in eval mode."""
    with _seeded(seed):
        model = DigitsLSTM()
        return _fit(model, split, seed=seed, epochs=epochs, lr=1e-2)


def write_demo_bundle(out_dir: Path, seed: int = 0) -> DemoBundle:
    """Train the digits CNN and write the demo project's files into `out_dir`.

    digits_cnn.onnx (golden, float32), digits_cnn_int8.onnx (compressed, QDQ int8, calibrated on
    training images), digits_test.npz (`input` float32 (N, 1, 8, 8), `labels` int64) and digits_cnn.pt2
    (the golden CNN as a torch.export program, for recovery jobs).
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    split = load_digits_split(seed)
    model = train_digits_cnn(split, seed=seed)
    golden = export_onnx(model, split.x_test[:2], out_dir / "digits_cnn.onnx")
    int8 = quantize_onnx_int8(golden, out_dir / "digits_cnn_int8.onnx", split.x_train[:512])
    test_npz = out_dir / "digits_test.npz"
    np.savez(test_npz, input=split.x_test, labels=split.y_test)
    golden_pt2 = export_torch_program(model, split.x_test[:2], out_dir / "digits_cnn.pt2")
    logger.info("demo bundle written to %s in %.1f s", out_dir, time.perf_counter() - started)
    return DemoBundle(
        golden_onnx=golden,
        int8_onnx=int8,
        test_npz=test_npz,
        test_accuracy=accuracy(model, split.x_test, split.y_test),
        golden_pt2=golden_pt2,
    )
