"""load_model on real exports of the digits CNN, and on broken or hostile files."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from backend.settings import Settings
from dataset_readers.archives import ArchiveLimits, archive_problem
from worker.demo.models import DigitsCNN, DigitsSplit
from worker.engine.errors import DatasetMismatchError, ModelLoadError
from worker.engine.loaders import OnnxRunner, extract_onnx_zip, load_model
from worker.engine.types import ModelFormat, Runner
from worker.jobs.model_files import archive_check

FORMATS: list[ModelFormat] = ["onnx", "onnx_zip", "torch_export", "torchscript"]


def only_output(runner: Runner, feeds: dict[str, np.ndarray]) -> np.ndarray:
    result = runner.run(feeds)
    assert list(result) == [spec.name for spec in runner.outputs]
    (value,) = result.values()
    return value


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_reproduces_the_torch_model(
    fmt: ModelFormat, cnn_files: dict[str, Path], digits_split: DigitsSplit, cnn_reference: np.ndarray
) -> None:
    runner = load_model(cnn_files[fmt], fmt)
    assert isinstance(runner, Runner)
    (spec,) = runner.inputs
    logits = only_output(runner, {spec.name: digits_split.x_test})
    assert logits.shape == cnn_reference.shape
    np.testing.assert_allclose(logits, cnn_reference, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("batch", [1, 7])
def test_batch_dimension_is_dynamic(
    fmt: ModelFormat,
    batch: int,
    cnn_files: dict[str, Path],
    digits_split: DigitsSplit,
    cnn_reference: np.ndarray,
) -> None:
    runner = load_model(cnn_files[fmt], fmt)
    logits = only_output(runner, {runner.inputs[0].name: digits_split.x_test[:batch]})
    np.testing.assert_allclose(logits, cnn_reference[:batch], rtol=1e-4, atol=1e-5)


def test_onnx_specs_are_the_declared_ones(cnn_files: dict[str, Path]) -> None:
    runner = load_model(cnn_files["onnx"], "onnx")
    # names and the symbolic batch name are what export_onnx was asked for
    assert [(s.name, s.shape, s.dtype) for s in runner.inputs] == [("input", ("batch", 1, 8, 8), "float32")]
    assert [(s.name, s.shape, s.dtype) for s in runner.outputs] == [("logits", ("batch", 10), "float32")]


def test_torch_export_specs_come_from_the_graph(cnn_files: dict[str, Path], digits_cnn: DigitsCNN) -> None:
    runner = load_model(cnn_files["torch_export"], "torch_export")
    (spec,) = runner.inputs
    assert spec.name == "x"  # DigitsCNN.forward's argument
    assert isinstance(spec.shape[0], str) and spec.shape[1:] == (1, 8, 8)
    assert spec.dtype == "float32"
    (out,) = runner.outputs
    assert isinstance(out.shape[0], str) and out.shape[1:] == (10,)
    assert runner.inputs == load_model(cnn_files["torch_export"], "torch_export").inputs  # stable names


def test_torchscript_specs_come_from_the_archive(cnn_files: dict[str, Path]) -> None:
    runner = load_model(cnn_files["torchscript"], "torchscript")
    assert [(s.name, s.shape, s.dtype) for s in runner.inputs] == [("input", ("batch", 1, 8, 8), "float32")]
    assert [(s.name, s.shape) for s in runner.outputs] == [("output", ("batch", 10))]


class _Pair(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x + y, x * y


class _Named(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"double": x * 2, "neg": -x}


def test_torchscript_without_spec_file_uses_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "pair.pt"
    torch.jit.save(torch.jit.script(_Pair()), str(path))
    runner = load_model(path, "torchscript")
    assert [s.name for s in runner.inputs] == ["x", "y"]
    assert [s.name for s in runner.outputs] == ["output_0", "output_1"]
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 3, dtype=np.float32)
    result = runner.run({"y": y, "x": x})
    np.testing.assert_array_equal(result["output_0"], x + y)
    np.testing.assert_array_equal(result["output_1"], x * y)


def test_torchscript_dict_outputs_are_named_by_their_keys(tmp_path: Path) -> None:
    path = tmp_path / "named.pt"
    torch.jit.save(torch.jit.script(_Named()), str(path))
    runner = load_model(path, "torchscript")
    x = np.ones((2, 2), dtype=np.float32)
    result = runner.run({"x": x})
    assert list(result) == ["double", "neg"] == [s.name for s in runner.outputs]
    np.testing.assert_array_equal(result["neg"], -x)


def test_torch_export_keeps_output_order(tmp_path: Path) -> None:
    program = torch.export.export(_Pair(), (torch.ones(2, 3), torch.zeros(2, 3)))
    path = tmp_path / "pair.pt2"
    torch.export.save(program, str(path))
    runner = load_model(path, "torch_export")
    assert [s.name for s in runner.inputs] == ["x", "y"]
    a, b = np.full((2, 3), 2, dtype=np.float32), np.full((2, 3), 5, dtype=np.float32)
    first, second = runner.run({"x": a, "y": b}).values()
    np.testing.assert_array_equal(first, a + b)
    np.testing.assert_array_equal(second, a * b)


def test_feeds_are_checked(
    cnn_files: dict[str, Path], digits_split: DigitsSplit, cnn_reference: np.ndarray
) -> None:
    runner = load_model(cnn_files["onnx"], "onnx")
    with pytest.raises(DatasetMismatchError, match="missing"):
        runner.run({"pixels": digits_split.x_test})
    with pytest.raises(DatasetMismatchError, match="axis 2"):
        runner.run({"input": np.zeros((2, 1, 9, 8), np.float32)})
    with pytest.raises(DatasetMismatchError, match="float32"):
        runner.run({"input": np.zeros((2, 1, 8, 8), np.complex64)})
    as_float64 = only_output(runner, {"input": digits_split.x_test[:3].astype(np.float64)})
    np.testing.assert_allclose(as_float64, cnn_reference[:3], rtol=1e-4, atol=1e-5)


def test_intra_op_threads(
    cnn_files: dict[str, Path], digits_split: DigitsSplit, cnn_reference: np.ndarray
) -> None:
    before = torch.get_num_threads()
    try:
        for fmt in FORMATS:
            runner = load_model(cnn_files[fmt], fmt, intra_op_threads=1)
            logits = only_output(runner, {runner.inputs[0].name: digits_split.x_test[:4]})
            np.testing.assert_allclose(logits, cnn_reference[:4], rtol=1e-4, atol=1e-5)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_onnx_zip_extraction_is_removed_on_close(cnn_files: dict[str, Path]) -> None:
    runner = load_model(cnn_files["onnx_zip"], "onnx_zip")
    assert isinstance(runner, OnnxRunner)
    folder = runner.extracted_to
    assert folder is not None and (folder / "model.onnx").is_file()
    runner.close()
    assert not folder.exists()


# ------------------------------------------------------------------------------------- broken files


def runtime_message(call: object) -> str:
    """The runtime's own error message, to check that ModelLoadError passes it on."""
    assert callable(call)
    with pytest.raises(Exception) as caught:
        call()
    return str(caught.value)


def test_truncated_onnx(cnn_files: dict[str, Path], tmp_path: Path) -> None:
    data = cnn_files["onnx"].read_bytes()
    broken = tmp_path / "truncated.onnx"
    broken.write_bytes(data[: len(data) // 2])
    words = runtime_message(lambda: ort.InferenceSession(str(broken), providers=["CPUExecutionProvider"]))
    with pytest.raises(ModelLoadError) as caught:
        load_model(broken, "onnx")
    assert words in str(caught.value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_text_file(fmt: ModelFormat, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("this is not a model\n" * 20)
    runtime_call = {
        "onnx": lambda: ort.InferenceSession(str(text), providers=["CPUExecutionProvider"]),
        "onnx_zip": lambda: zipfile.ZipFile(text),
        "torch_export": lambda: torch.export.load(str(text)),
        "torchscript": lambda: torch.jit.load(str(text)),
    }[fmt]
    words = runtime_message(runtime_call)
    with pytest.raises(ModelLoadError) as caught:
        load_model(text, fmt)
    assert words in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        load_model(tmp_path / "nope.onnx", "onnx")


def write_zip(path: Path, entries: dict[str, bytes], symlinks: tuple[str, ...] = ()) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name in symlinks:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
    return path


def test_zip_with_parent_entry_is_refused(cnn_files: dict[str, Path], tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    archive = write_zip(
        inner / "evil.zip", {"model.onnx": cnn_files["onnx"].read_bytes(), "../evil": b"owned"}
    )
    with pytest.raises(ModelLoadError, match=r"\.\./evil"):
        load_model(archive, "onnx_zip")
    assert not list(tmp_path.rglob("evil")), "an entry was written outside the extraction folder"


@pytest.mark.parametrize(
    ("entries", "symlinks", "expected"),
    [
        ({"/abs/model.onnx": b"x"}, (), "absolute"),
        ({"model.onnx": b"x"}, ("weights.data",), "symbolic link"),
        ({"a.onnx": b"x", "b/b.onnx": b"x"}, (), "exactly one .onnx"),
        ({"weights.data": b"x"}, (), "exactly one .onnx"),
    ],
)
def test_hostile_or_ambiguous_zips_are_refused(
    tmp_path: Path, entries: dict[str, bytes], symlinks: tuple[str, ...], expected: str
) -> None:
    archive = write_zip(tmp_path / "bad.zip", entries, symlinks)
    with pytest.raises(ModelLoadError, match=expected):
        load_model(archive, "onnx_zip")


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        (ArchiveLimits(max_members=2), "holds 3 members; at most 2"),
        (ArchiveLimits(max_uncompressed_bytes=1024), "at most 1024 are accepted"),
        (ArchiveLimits(max_expansion=2, bomb_floor_bytes=1024), "refusing a zip bomb"),
    ],
)
def test_zips_over_the_archive_limits_are_refused_before_extraction(
    cnn_files: dict[str, Path], tmp_path: Path, limits: ArchiveLimits, expected: str
) -> None:
    """The engine applies the caller's archive rules (here the upload checks', dataset_readers/archives.py) before
    it writes anything: here to a model plus 64 KiB of zeros (compressed 60 times)."""
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model.onnx", cnn_files["onnx"].read_bytes())
        zf.writestr("weights.bin", bytes(64 << 10))
        zf.writestr("notes.txt", b"x")
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(ModelLoadError, match=expected):
        extract_onnx_zip(archive, dest, lambda infos, size: archive_problem(infos, size, limits))
    assert list(dest.iterdir()) == []
    assert extract_onnx_zip(archive, dest, archive_check(Settings())) == dest / "model.onnx"


def test_the_worker_check_uses_the_workers_settings(cnn_files: dict[str, Path], tmp_path: Path) -> None:
    """worker/jobs/model_files.py builds the engine's check from the worker's settings, not the environment's."""
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model.onnx", cnn_files["onnx"].read_bytes())
        zf.writestr("notes.txt", b"x")
    with pytest.raises(ModelLoadError, match="KNEEBOARD_ARCHIVE_MAX_MEMBERS"):
        extract_onnx_zip(archive, tmp_path / "a", archive_check(Settings(archive_max_members=1)))
