"""Upload a model and a dataset over HTTP, let a real Celery worker on Redis inspect them and run a
fidelity job, and check the stored numbers against an independent computation (ONNX Runtime + scipy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from scipy.special import log_softmax
from scipy.stats import entropy

from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e


def run_fidelity(
    c: Any, project: dict[str, Any], golden: Any, compressed: Any, dataset: Any
) -> dict[str, Any]:
    """Launch a fidelity job over HTTP and wait for it to succeed."""
    job = c.create_job(
        project["id"],
        "fidelity",
        {
            "golden_model_id": golden["id"],
            "compressed_model_id": compressed["id"],
            "dataset_id": dataset["id"],
        },
    )
    done = c.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    return done  # type: ignore[no-any-return]


def _ort_logits(path: object, x: np.ndarray, optimize: bool = True) -> np.ndarray:
    """The model's first output in onnxruntime: deployed (default optimizations: QDQ groups fused into int8
    kernels) or, with optimize=False, as simulated quantization (quantize-dequantize in float)."""
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0], dtype=np.float64)


def _sqnr(golden: np.ndarray, compressed: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(golden**2) / np.sum((golden - compressed) ** 2)))


def test_upload_inspect_and_compare_through_the_queue(make_stack: Any, demo_files: Any) -> None:
    stack: Stack = make_stack()
    stack.add_worker("w1")
    c = stack.client
    project = c.create_project("e2e")
    golden = c.upload_model(project["id"], demo_files.golden_onnx, name="golden")
    compressed = c.upload_model(project["id"], demo_files.int8_onnx, name="int8")
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)

    inspected = c.wait_model(golden["id"], timeout=120)
    assert inspected["status"] == "ready", inspected["error"]
    reference = onnx.load(str(demo_files.golden_onnx))
    weights = [
        t for t in reference.graph.initializer if t.data_type == onnx.TensorProto.FLOAT
    ]  # not shape constants
    n_params = sum(int(np.prod(t.dims)) for t in weights)
    assert inspected["inspection"]["total_params"] == n_params
    assert [i["name"] for i in inspected["inspection"]["inputs"]] == [i.name for i in reference.graph.input]
    assert inspected["inspection"]["macs"] > 0
    assert c.wait_model(compressed["id"], timeout=120)["status"] == "ready"

    job = done = run_fidelity(c, project, golden, compressed, dataset)
    assert done["progress"] == 1.0 and done["attempts"] == 1 and done["worker_id"]

    # The same numbers, computed independently from the files.
    data = np.load(demo_files.test_npz)
    x, labels = data["input"], data["labels"]
    p_logits, q_logits = _ort_logits(demo_files.golden_onnx, x), _ort_logits(demo_files.int8_onnx, x)
    kl = entropy(np.exp(log_softmax(p_logits, axis=1)), np.exp(log_softmax(q_logits, axis=1)), axis=1)
    agreement = float(np.mean(p_logits.argmax(1) == q_logits.argmax(1)))

    report = c.fidelity(job["id"])
    summary = report["summary"]
    assert summary["n_samples"] == len(x)
    metrics = summary["outputs"][summary["primary_output"]]
    assert metrics["kl_mean_nats"] == pytest.approx(kl.mean(), rel=1e-3, abs=1e-6)
    assert metrics["top1_match"] == pytest.approx(agreement)
    assert metrics["labels"]["golden_top1_accuracy"] == pytest.approx(
        float(np.mean(p_logits.argmax(1) == labels))
    )

    worst = c.http.get(
        f"/jobs/{job['id']}/fidelity/samples", params={"sort": "kl", "order": "desc", "limit": 5}
    ).json()
    assert worst["total"] == len(x)
    assert [row["sample_index"] for row in worst["items"]] == list(np.argsort(-kl, kind="stable")[:5])
    flipped = c.http.get(
        f"/jobs/{job['id']}/fidelity/samples", params={"flipped": True, "limit": 1000}
    ).json()
    assert flipped["total"] == int(np.sum(p_logits.argmax(1) != q_logits.argmax(1)))

    # The per-layer profile of the QDQ model runs simulated quantization (graph optimizations off, as
    # onnxruntime's qdq_loss_debug): its last layer is the logits, whose accumulated SQNR must be the output
    # SQNR of the two models run that way here.
    profile = c.http.get(f"/jobs/{job['id']}/fidelity/layers").json()
    assert profile["n_samples"] == len(x) and len(profile["layers"]) >= 4, profile
    by_name = {layer["name"]: layer for layer in profile["layers"]}
    simulated = _sqnr(
        _ort_logits(demo_files.golden_onnx, x, optimize=False),
        _ort_logits(demo_files.int8_onnx, x, optimize=False),
    )
    assert by_name["logits"]["accumulated"]["sqnr_db"] == pytest.approx(simulated, abs=0.05)
    assert by_name["logits"]["depth_fraction"] == 1.0
    assert all(layer["local"] is not None for layer in profile["layers"])
    # The QDQ model's own quantizers reach the API (their numbers are checked against onnxruntime's
    # qdq_loss_debug in tests/engine/test_layer_profile.py), and so does the batch the budget chose.
    requantized = [layer for layer in profile["layers"] if layer["qdq_err"] is not None]
    assert requantized and all(layer["qdq_input"] for layer in requantized), profile["layers"]
    assert profile["profile_batch_size"] >= 1

    # The deployed runtime's fused int8 kernels can lose more than the simulation (on x86-64 without VNNI
    # they saturate): the job's kernel gap is the difference, whatever it is on this machine.
    runtime = _sqnr(p_logits, q_logits)
    assert metrics["sqnr_db"] == pytest.approx(runtime, abs=0.05)
    [gap] = profile["kernel_gap"]
    assert gap["output"] == gap["compressed_output"] == "logits"
    assert gap["simulated_sqnr_db"] == pytest.approx(simulated, abs=0.05)
    assert gap["runtime_sqnr_db"] == pytest.approx(runtime, abs=0.05)
    assert gap["gap_db"] == pytest.approx(simulated - runtime, abs=0.05)
    assert gap["significant"] == (gap["gap_db"] > gap["threshold_db"])
    if gap["significant"]:
        assert gap["note"] in profile["notes"]
        assert (
            f"lose {gap['gap_db']:.1f} dB more than simulated quantization at output 'logits'" in gap["note"]
        )
    else:
        assert gap["note"] is None and not any("Runtime kernels" in note for note in profile["notes"])

    # A profile over a subset: the runtime's side of the gap is measured on the same first samples.
    subset_job = c.create_job(
        project["id"],
        "fidelity",
        {
            "golden_model_id": golden["id"],
            "compressed_model_id": compressed["id"],
            "dataset_id": dataset["id"],
            "layer_profile_samples": 100,
        },
    )
    assert c.wait_job(subset_job["id"], timeout=300)["status"] == "succeeded"
    subset = c.http.get(f"/jobs/{subset_job['id']}/fidelity/layers").json()
    assert subset["n_samples"] == 100
    [gap] = subset["kernel_gap"]
    sub_simulated = _sqnr(
        _ort_logits(demo_files.golden_onnx, x[:100], optimize=False),
        _ort_logits(demo_files.int8_onnx, x[:100], optimize=False),
    )
    assert gap["simulated_sqnr_db"] == pytest.approx(sub_simulated, abs=0.05)
    assert gap["runtime_sqnr_db"] == pytest.approx(_sqnr(p_logits[:100], q_logits[:100]), abs=0.05)
    assert gap["gap_db"] == pytest.approx(sub_simulated - _sqnr(p_logits[:100], q_logits[:100]), abs=0.05)


def test_a_model_that_fails_to_load_is_marked_invalid_with_the_loaders_message(
    make_stack: Any, tmp_path: Any
) -> None:
    """It passes the API's structural check but ONNX Runtime refuses it: the worker says why."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("NoSuchOperator", ["input"], ["output"])], "bad", [x], [y])
    path = tmp_path / "bad_op.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)

    stack: Stack = make_stack()
    stack.add_worker("w1")
    project = stack.client.create_project("invalid")
    model = stack.client.wait_model(stack.client.upload_model(project["id"], path)["id"], timeout=120)
    assert model["status"] == "invalid"
    assert "NoSuchOperator" in model["error"]
    jobs = stack.client.http.get("/jobs", params={"project_id": project["id"], "kind": "inspect"}).json()[
        "items"
    ]
    assert jobs[0]["status"] == "failed" and "NoSuchOperator" in jobs[0]["error"]


def test_mixed_formats_and_an_image_dataset(make_stack: Any, tmp_path: Any) -> None:
    """A torch.export golden (.pt2) against its ONNX export, on a zip of PNG digits with a labels CSV:
    the two runtimes agree to float precision, so the divergence must be essentially zero."""
    import io
    import zipfile

    from tests.support.images import png_bytes
    from worker.demo.models import (
        export_onnx,
        export_torch_program,
        load_digits_split,
        train_digits_cnn,
    )

    split = load_digits_split()
    model = train_digits_cnn(split, epochs=3)
    sample = split.x_test[:2]
    pt2 = export_torch_program(model, sample, tmp_path / "digits.pt2")
    onnx_path = export_onnx(model, sample, tmp_path / "digits.onnx")

    images = np.clip(split.x_test[:40, 0] * 255, 0, 255).round().astype(np.uint8)  # (40, 8, 8) grayscale
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, image in enumerate(images):
            zf.writestr(f"digits/{i:03d}.png", png_bytes(image))
        zf.writestr(
            "digits/labels.csv",
            "filename,label\n" + "".join(f"{i:03d}.png,{y}\n" for i, y in enumerate(split.y_test[:40])),
        )
    (tmp_path / "digits.zip").write_bytes(buf.getvalue())

    stack: Stack = make_stack()
    stack.add_worker("w1")
    c = stack.client
    project = c.create_project("mixed")
    golden = c.upload_model(project["id"], pt2)
    compressed = c.upload_model(project["id"], onnx_path)
    assert golden["format"] == "torch_export" and compressed["format"] == "onnx"
    with (tmp_path / "digits.zip").open("rb") as f:
        response = c.http.post(
            f"/projects/{project['id']}/datasets",
            files={"file": ("digits.zip", f)},
            data={"preprocessing": '{"size": [8, 8], "mode": "L", "scale": 0.00392156862745098}'},
        )
    assert response.status_code == 201, response.text
    dataset = response.json()
    assert dataset["arrays"]["input"]["shape"] == [40, 1, 8, 8] and dataset["has_labels"]
    for m in (golden, compressed):
        ready = c.wait_model(m["id"], timeout=120)
        assert ready["status"] == "ready", ready["error"]
    assert c.model(golden["id"])["inspection"]["total_params"] == sum(p.numel() for p in model.parameters())

    job = run_fidelity(c, project, golden, compressed, dataset)
    summary = c.fidelity(job["id"])["summary"]
    metrics = summary["outputs"][summary["primary_output"]]
    assert summary["n_samples"] == 40
    assert metrics["top1_match"] == 1.0 and metrics["kl_mean_nats"] < 1e-6
    assert metrics["labels"]["n"] == 40
    # The ONNX file is torch's dynamo export of the same program: each module call of the .pt2 matches the
    # ONNX tensor named after its last fx node (layer_profile/cross_format.py), no name map needed; the same
    # float model in two runtimes leaves every layer essentially exact (SQNR null = infinite).
    profile = c.http.get(f"/jobs/{job['id']}/fidelity/layers").json()
    layers = {layer["name"]: layer for layer in profile["layers"]}
    assert set(layers) == {"conv1", "relu", "conv2", "relu#2", "fc"}, (sorted(layers), profile["notes"])
    assert all(layer["match_method"] == "module" for layer in layers.values())
    for layer in layers.values():
        sqnr = layer["accumulated"]["sqnr_db"]
        assert sqnr is None or sqnr > 60, (layer["name"], sqnr)
    assert any("module calls" in note for note in profile["notes"]), profile["notes"]
