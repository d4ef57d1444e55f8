"""How profile_layers streams and what it accepts: the batch size does not change the numbers,
progress and cancellation, external data in an ONNX zip, mixed formats matched only through the name map,
a strict JSON document with the documented keys, and the error paths (TorchScript unsupported, no batches,
a tensor without a batch axis or of another shape).

profile_layers on the real digits CNN and its exports (the `models` fixture of tests/engine/conftest.py)."""

from __future__ import annotations

import json
import math
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.support.digits_layer_profile import Models, batches, by_name, sqnr
from worker.demo.models import DigitsSplit, export_onnx, export_torchscript
from worker.engine.errors import DatasetMismatchError, JobCancelled
from worker.engine.layer_profile import profile_layers

STAT_KEYS = {"cosine_mean", "cosine_min", "sqnr_db", "sqnr_db_infinite"}
LAYER_KEYS = {
    "name",
    "compressed_name",
    "op_type",
    "depth",
    "depth_fraction",
    "accumulated",
    "local",
    "local_note",
    "qdq_err",
    "qdq_input",
    "canonical_id",
    "aliases",
    "match_method",
    "match_confidence",
    "shift",
}


# ------------------------------------------------------------------------------------------- streaming


def test_batch_size_does_not_change_the_numbers(models: Models, digits_split: DigitsSplit) -> None:
    x = digits_split.x_test
    small = profile_layers(models.golden_onnx, "onnx", models.int8_onnx, "onnx", batches(x, 7))
    large = profile_layers(models.golden_onnx, "onnx", models.int8_onnx, "onnx", batches(x, 1000))
    assert [layer.name for layer in small.layers] == [layer.name for layer in large.layers]
    for a, b in zip(small.layers, large.layers, strict=True):
        assert a.local is not None and b.local is not None
        for sa, sb in ((a.accumulated, b.accumulated), (a.local, b.local)):
            assert sa.sqnr_db == pytest.approx(sb.sqnr_db, rel=1e-9)
            assert sa.cosine_mean == pytest.approx(sb.cosine_mean, rel=1e-9)
            assert sa.cosine_min == pytest.approx(sb.cosine_min, rel=1e-9)


def test_progress_reports_samples_done_and_cancellation_propagates(
    models: Models, digits_split: DigitsSplit
) -> None:
    x = digits_split.x_test[:100]
    seen: list[int] = []
    profile = profile_layers(
        models.golden_onnx,
        "onnx",
        models.int8_onnx,
        "onnx",
        batches(x, 40),
        on_progress=seen.append,
        memory_budget_mb=0.5,
    )
    size = profile.profile_batch_size
    assert 1 < size < 50
    assert seen == [1, *range(1 + size, 100, size), 100]  # the one-sample probe, then the profile's batches

    def cancel(done: int) -> None:
        raise JobCancelled("stop")

    with pytest.raises(JobCancelled):
        profile_layers(
            models.golden_onnx, "onnx", models.int8_onnx, "onnx", batches(x, 40), on_progress=cancel
        )


# ------------------------------------------------------------------------------- formats and edge cases


def test_external_data_in_onnx_zip_gives_the_same_profile(
    models: Models, digits_split: DigitsSplit, tmp_path: Path
) -> None:
    folder = tmp_path / "external"
    folder.mkdir()
    export_onnx(models.golden, digits_split.x_test[:2], folder / "model.onnx", external_data=True)
    assert len(list(folder.iterdir())) > 1
    archive = tmp_path / "golden.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in folder.iterdir():
            zf.write(file, file.name)
    x = digits_split.x_test[:120]
    from_zip = profile_layers(archive, "onnx_zip", models.int8_onnx, "onnx", batches(x, 64))
    plain = profile_layers(models.golden_onnx, "onnx", models.int8_onnx, "onnx", batches(x, 64))
    assert from_zip.to_dict()["layers"] == plain.to_dict()["layers"]
    assert len(from_zip.layers) == 5


def test_mixed_formats_match_only_through_the_name_map(models: Models, digits_split: DigitsSplit) -> None:
    x = digits_split.x_test[:200]
    unmapped = profile_layers(
        models.golden_onnx, "onnx", models.perturbed_pt2, "torch_export", batches(x, 64)
    )
    assert unmapped.layers == []
    assert "relu_1" in unmapped.unmatched_golden and "relu#2" in unmapped.unmatched_compressed
    assert any("name mapping" in note and "none was given" in note for note in unmapped.notes)

    mapped = profile_layers(
        models.golden_onnx,
        "onnx",
        models.perturbed_pt2,
        "torch_export",
        batches(x, 64),
        name_map={"conv2d_1": "conv2", "logits": "fc", "relu": "missing"},
    )
    assert [(layer.name, layer.compressed_name) for layer in mapped.layers] == [
        ("conv2d_1", "conv2"),
        ("logits", "fc"),
    ]
    assert all(layer.local is None and layer.local_note for layer in mapped.layers)
    assert any("'missing'" in note for note in mapped.notes)
    same_format = by_name(
        profile_layers(models.golden_onnx, "onnx", models.perturbed_onnx, "onnx", batches(x, 64))
    )
    for layer in mapped.layers:
        assert layer.accumulated.sqnr_db == pytest.approx(
            same_format[layer.name]["accumulated"]["sqnr_db"], abs=1e-3
        )


def test_to_dict_is_strict_json_with_the_documented_keys(models: Models, digits_split: DigitsSplit) -> None:
    profile = profile_layers(
        models.golden_onnx, "onnx", models.perturbed_onnx, "onnx", batches(digits_split.x_test[:64], 32)
    )
    data = json.loads(json.dumps(profile.to_dict(), allow_nan=False))
    assert set(data) == {
        "n_samples",
        "profile_batch_size",
        "layers",
        "unmatched_golden",
        "unmatched_compressed",
        "notes",
        "likely_causes",
        "not_applicable",
        "calibration_samples",
    }
    for layer in data["layers"]:
        assert set(layer) == LAYER_KEYS
        assert set(layer["accumulated"]) == set(layer["local"]) == STAT_KEYS
        assert layer["qdq_err"] is None  # no quantizer in a float model
    # One identity per row: the layers' module paths (the post-ReLU rows), distinct ids for the rest.
    ids = {layer["name"]: layer["canonical_id"] for layer in data["layers"]}
    assert {ids["relu"], ids["relu_1"], ids["logits"]} == {"conv1", "conv2", "fc"}
    assert len(set(ids.values())) == len(ids)
    assert all(layer["match_method"] == "name" for layer in data["layers"])


def test_torchscript_is_reported_as_unsupported(models: Models, digits_split: DigitsSplit) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = export_torchscript(models.golden, digits_split.x_test[:2], Path(tmp) / "model.pt")
        profile = profile_layers(
            script, "torchscript", script, "torchscript", batches(digits_split.x_test, 64)
        )
    assert profile.layers == []
    assert any("TorchScript" in note and "torch.export" in note for note in profile.notes)


def test_no_batches_is_a_dataset_error(models: Models) -> None:
    with pytest.raises(DatasetMismatchError):
        profile_layers(models.golden_onnx, "onnx", models.int8_onnx, "onnx", iter([]))


def tiny_onnx(path: Path, scale: np.ndarray) -> Path:
    """x (n, 4) -> t = x^T (4, n) -> y = t * scale (4, n) -> z = y^T (n, 4) -> m = mean(z, axis 1) (n, 1)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
        helper.make_node("Mul", ["t", "scale"], ["y"]),
        helper.make_node("Transpose", ["y"], ["z"], perm=[1, 0]),
        helper.make_node("ReduceMean", ["z"], ["m"], axes=[1], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("m", TensorProto.FLOAT, ["n", 1])],
        [numpy_helper.from_array(scale.astype(np.float32), "scale")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_tensor_without_batch_axis_gets_sqnr_only_and_a_shape_mismatch_is_left_out(tmp_path: Path) -> None:
    x = np.random.default_rng(0).normal(size=(30, 4)).astype(np.float32)
    scale = np.ones((4, 1), np.float32)
    noisy = scale.copy()
    noisy[2] = 1.1
    golden = tiny_onnx(tmp_path / "golden.onnx", scale)
    compressed = tiny_onnx(tmp_path / "compressed.onnx", noisy)

    def feeds() -> Iterator[dict[str, np.ndarray]]:
        return ({"x": x[i : i + 10]} for i in range(0, 30, 10))

    layers = {
        layer.name: layer for layer in profile_layers(golden, "onnx", compressed, "onnx", feeds()).layers
    }
    assert list(layers) == ["t", "y", "z", "m"]
    y = layers["y"]
    assert y.accumulated.cosine_mean is None and y.accumulated.cosine_min is None  # (4, n): no sample axis
    assert y.accumulated.sqnr_db == pytest.approx(sqnr(x.T * scale, x.T * noisy), rel=1e-6)
    assert y.local is not None and y.local.sqnr_db == pytest.approx(y.accumulated.sqnr_db, rel=1e-9)
    z = layers["z"]
    assert z.accumulated.cosine_mean is not None and z.accumulated.cosine_mean < 1.0
    assert z.local is not None and z.local.sqnr_db == math.inf  # the transpose adds no error

    mismatched = profile_layers(golden, "onnx", compressed, "onnx", feeds(), name_map={"y": "m"})
    assert [layer.name for layer in mismatched.layers] == ["t", "z", "m"]
    assert any("'y' left out" in note and "shapes differ" in note for note in mismatched.notes)
    assert "y" in mismatched.unmatched_compressed
