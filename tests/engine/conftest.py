"""Real models for the engine tests: the digits CNN trained once per session and its exports."""

from __future__ import annotations

import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.digits_layer_profile import Models, perturb_conv2
from tests.support.fake_runners import C, D, N
from worker.demo.models import (
    DemoBundle,
    DigitsCNN,
    DigitsSplit,
    export_onnx,
    export_torch_program,
    export_torchscript,
    load_digits_split,
    quantize_onnx_int8,
    train_digits_cnn,
    write_demo_bundle,
)
from worker.engine.compression import CompressibleModel, open_compressible


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Tiny models run faster on one intra-op thread, above all on a busy 2-core machine (torch's setting
    is process-wide, so it is restored after the module)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@dataclass(frozen=True)
class TimedBundle:
    bundle: DemoBundle
    seconds: float


@pytest.fixture(scope="session")
def digits_split() -> DigitsSplit:
    return load_digits_split(seed=0)


@pytest.fixture(scope="session")
def digits_cnn(digits_split: DigitsSplit) -> torch.nn.Module:
    return train_digits_cnn(digits_split, seed=0)


@pytest.fixture(scope="session")
def digits_bundle_timed(tmp_path_factory: pytest.TempPathFactory) -> TimedBundle:
    started = time.perf_counter()
    bundle = write_demo_bundle(tmp_path_factory.mktemp("demo_bundle"))
    return TimedBundle(bundle, time.perf_counter() - started)


@pytest.fixture(scope="session")
def digits_bundle(digits_bundle_timed: TimedBundle) -> DemoBundle:
    return digits_bundle_timed.bundle


def zip_folder(folder: Path, archive: Path) -> Path:
    with zipfile.ZipFile(archive, "w") as zf:
        for file in sorted(folder.rglob("*")):
            zf.write(file, file.relative_to(folder).as_posix())
    return archive


@pytest.fixture(scope="session")
def cnn_files(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """The trained CNN in every format: onnx, onnx_zip (weights as external data), torch_export, torchscript."""
    folder = tmp_path_factory.mktemp("cnn_exports")
    sample = digits_split.x_test[:2]
    external = folder / "external"
    external.mkdir()
    export_onnx(digits_cnn, sample, external / "model.onnx", external_data=True)
    assert len(list(external.iterdir())) > 1, "the exporter wrote no external data file"
    return {
        "onnx": export_onnx(digits_cnn, sample, folder / "cnn.onnx"),
        "onnx_zip": zip_folder(external, folder / "cnn_onnx.zip"),
        "torch_export": export_torch_program(digits_cnn, sample, folder / "cnn.pt2"),
        "torchscript": export_torchscript(digits_cnn, sample, folder / "cnn.pt"),
    }


@pytest.fixture(scope="session")
def cnn_reference(digits_cnn: DigitsCNN, digits_split: DigitsSplit) -> np.ndarray:
    """The torch model's own logits on the test split: the reference every export must reproduce."""
    with torch.inference_mode():
        return digits_cnn(torch.from_numpy(digits_split.x_test)).numpy()


@pytest.fixture(scope="module")
def cnn_path(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The trained CNN as one ONNX file, exported once per session (shared with test_compression_onnx)."""
    from tests.engine.test_compression_onnx import exported_onnx

    return exported_onnx("cnn", digits_cnn, digits_split.x_test[:2], tmp_path_factory)


@pytest.fixture(scope="module")
def golden(cnn_path: Path) -> CompressibleModel:
    """The CNN opened for compression (ONNX, one intra-op thread)."""
    return open_compressible(cnn_path, "onnx", intra_op_threads=1)


@pytest.fixture(scope="module")
def data() -> dict[str, np.ndarray]:
    """A random linear model, a noisy copy of it, and inputs and labels for the fidelity tests
    (tests/support/fake_runners.py)."""
    rng = np.random.default_rng(0)
    w = rng.normal(size=(D, C))
    return {
        "x": rng.normal(size=(N, D)),
        "labels": rng.integers(0, C, size=N),
        "w": w,
        "w_noisy": w + rng.normal(0, 0.25, size=w.shape),
    }


@pytest.fixture(scope="module")
def models(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory
) -> Models:
    """The digits CNN's files the layer-profile tests compare: fp32, int8 QDQ and one layer perturbed
    (tests/support/digits_layer_profile.py)."""
    folder = tmp_path_factory.mktemp("layer_profile")
    sample = digits_split.x_test[:2]
    perturbed = perturb_conv2(digits_cnn)
    golden_onnx = export_onnx(digits_cnn, sample, folder / "golden.onnx")
    return Models(
        golden_onnx=golden_onnx,
        int8_onnx=quantize_onnx_int8(golden_onnx, folder / "int8.onnx", digits_split.x_train[:512]),
        perturbed_onnx=export_onnx(perturbed, sample, folder / "perturbed.onnx"),
        golden_pt2=export_torch_program(digits_cnn, sample, folder / "golden.pt2"),
        perturbed_pt2=export_torch_program(perturbed, sample, folder / "perturbed.pt2"),
        golden=digits_cnn,
        perturbed=perturbed,
    )
