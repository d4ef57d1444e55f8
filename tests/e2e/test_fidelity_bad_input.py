"""Fidelity jobs on input that does not fit, through the real queue: each fails (or warns) with a message
that names the problem, and a golden model compared with itself diverges by exactly zero."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e


def _unary_model(path: Path, op: str, width: int) -> Path:
    """y = op(x) on (batch, width) float inputs."""
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", width])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", width])
    graph = helper.make_graph([helper.make_node(op, ["input"], ["output"])], op.lower(), [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(scope="module")
def stack_with_worker(make_stack_module: Any) -> Stack:
    stack: Stack = make_stack_module()
    stack.add_worker("w1")
    return stack


def _setup(
    stack: Stack, tmp_path: Path, models: dict[str, Path], arrays: dict[str, np.ndarray]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    c = stack.client
    project = c.create_project(f"bad-{tmp_path.name}")
    uploaded = {}
    for role, path in models.items():
        uploaded[role] = c.wait_model(c.upload_model(project["id"], path)["id"], timeout=120)
        assert uploaded[role]["status"] == "ready", uploaded[role]["error"]
    np.savez(tmp_path / "data.npz", **arrays)  # type: ignore[arg-type]
    dataset = c.upload_dataset(project["id"], tmp_path / "data.npz")
    return project, uploaded, dataset


def _fidelity(
    stack: Stack,
    project: dict[str, Any],
    golden: dict[str, Any],
    compressed: dict[str, Any],
    dataset: dict[str, Any],
    **params: Any,
) -> dict[str, Any]:
    job = stack.client.create_job(
        project["id"],
        "fidelity",
        {
            "golden_model_id": golden["id"],
            "compressed_model_id": compressed["id"],
            "dataset_id": dataset["id"],
        }
        | params,
    )
    return stack.client.wait_job(job["id"], timeout=120)


def test_dataset_of_the_wrong_shape_names_both_shapes(stack_with_worker: Stack, tmp_path: Path) -> None:
    model = _unary_model(tmp_path / "abs.onnx", "Abs", 4)
    project, m, dataset = _setup(
        stack_with_worker, tmp_path, {"g": model}, {"input": np.zeros((6, 5), np.float32)}
    )
    done = _fidelity(stack_with_worker, project, m["g"], m["g"], dataset)
    assert done["status"] == "failed"
    assert "(batch, 4)" in done["error"] and "(6, 5)" in done["error"], done["error"]


def test_models_whose_outputs_differ_are_refused(stack_with_worker: Stack, tmp_path: Path) -> None:
    narrow = _unary_model(tmp_path / "abs4.onnx", "Abs", 4)
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 8])
    graph = helper.make_graph(
        [helper.make_node("Concat", ["input", "input"], ["output"], axis=1)], "wide", [x], [y]
    )
    wide = tmp_path / "wide.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), wide)
    project, m, dataset = _setup(
        stack_with_worker, tmp_path, {"g": narrow, "c": wide}, {"input": np.ones((3, 4), np.float32)}
    )
    done = _fidelity(stack_with_worker, project, m["g"], m["c"], dataset)
    assert done["status"] == "failed" and "output" in done["error"]
    assert "4" in done["error"] and "8" in done["error"], done["error"]


def test_nan_outputs_are_counted_and_excluded_with_a_warning(
    stack_with_worker: Stack, tmp_path: Path
) -> None:
    golden = _unary_model(tmp_path / "abs.onnx", "Abs", 4)
    compressed = _unary_model(tmp_path / "sqrt.onnx", "Sqrt", 4)  # NaN where the input is negative
    x = np.abs(np.random.default_rng(0).normal(size=(10, 4))).astype(np.float32) + 0.1
    x[[2, 7], 0] = -1.0
    project, m, dataset = _setup(stack_with_worker, tmp_path, {"g": golden, "c": compressed}, {"input": x})
    done = _fidelity(stack_with_worker, project, m["g"], m["c"], dataset, layer_profile=False)
    assert done["status"] == "succeeded", done["error"]
    summary = stack_with_worker.client.fidelity(done["id"])["summary"]
    output = summary["outputs"]["output"]
    no_profile = stack_with_worker.client.http.get(f"/jobs/{done['id']}/fidelity/layers")
    assert no_profile.status_code == 404 and "layer_profile" in no_profile.json()["detail"]
    assert output["n_nonfinite_compressed"] == 2 and output["n_finite"] == 8
    assert summary["warnings"], "a warning must say that samples were excluded"
    rows = stack_with_worker.client.http.get(
        f"/jobs/{done['id']}/fidelity/samples", params={"sort": "sample_index", "order": "asc"}
    ).json()
    assert [r["finite"] for r in rows["items"]] == [i not in (2, 7) for i in range(10)]


def test_a_model_compared_with_itself_diverges_by_exactly_zero(
    stack_with_worker: Stack, tmp_path: Path, demo_files: Any
) -> None:
    c = stack_with_worker.client
    project = c.create_project("self")
    model = c.wait_model(c.upload_model(project["id"], demo_files.int8_onnx)["id"], timeout=120)
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)
    done = _fidelity(stack_with_worker, project, model, model, dataset)
    assert done["status"] == "succeeded", done["error"]
    metrics = c.fidelity(done["id"])["summary"]["outputs"]["logits"]
    assert metrics["kl_mean_nats"] == 0.0 and metrics["js_mean_nats"] == 0.0 and metrics["tv_mean"] == 0.0
    assert metrics["top1_match"] == 1.0 and metrics["cosine_min"] == 1.0
    assert metrics["sqnr_db"] is None and metrics["sqnr_db_infinite"] is True
    layers = c.http.get(f"/jobs/{done['id']}/fidelity/layers").json()["layers"]
    assert layers and all(
        layer["accumulated"]["sqnr_db_infinite"] and layer["accumulated"]["cosine_min"] == 1.0
        for layer in layers
    )


def test_runs_of_a_project_are_listed_for_comparison(
    stack_with_worker: Stack, tmp_path: Path, demo_files: Any
) -> None:
    c = stack_with_worker.client
    project = c.create_project("compare")
    golden = c.wait_model(
        c.upload_model(project["id"], demo_files.golden_onnx, name="fp32")["id"], timeout=120
    )
    int8 = c.wait_model(c.upload_model(project["id"], demo_files.int8_onnx, name="int8")["id"], timeout=120)
    dataset = c.upload_dataset(project["id"], demo_files.test_npz, name="digits")
    same = _fidelity(stack_with_worker, project, golden, golden, dataset)
    quantized = _fidelity(stack_with_worker, project, golden, int8, dataset)
    named = c.http.patch(f"/jobs/{quantized['id']}", json={"name": "int8 calibrated", "tags": ["v2"]})
    assert named.status_code == 200, named.text
    runs = c.http.get(f"/projects/{project['id']}/fidelity-runs").json()
    assert runs["total"] == 2
    by_job = {r["job_id"]: r for r in runs["items"]}
    assert by_job[same["id"]]["headline"]["kl_mean_nats"] == 0.0
    assert by_job[quantized["id"]]["headline"]["kl_mean_nats"] > 0.0
    assert by_job[quantized["id"]]["compressed"] == {"id": int8["id"], "name": "int8"}
    # the runs say which is which by name, not only by time (issue 35)
    assert (by_job[quantized["id"]]["name"], by_job[quantized["id"]]["tags"]) == ("int8 calibrated", ["v2"])
    assert by_job[same["id"]]["name"] == ""
    assert by_job[quantized["id"]]["dataset"]["name"] == "digits"
    assert by_job[quantized["id"]]["headline"]["top1_accuracy_drop_pp"] is not None
    filtered = c.http.get(
        f"/projects/{project['id']}/fidelity-runs", params={"golden_model_id": int8["id"]}
    ).json()
    assert filtered["total"] == 0
    # where the int8 model is the compressed side: the trends panel of its page points there (issue 35)
    as_compressed = c.http.get(
        f"/projects/{project['id']}/fidelity-runs", params={"compressed_model_id": int8["id"]}
    ).json()
    assert [r["job_id"] for r in as_compressed["items"]] == [quantized["id"]]
