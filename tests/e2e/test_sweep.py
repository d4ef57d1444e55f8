"""A sweep through the real queue: configurations evaluated in parallel by two workers, stored as points,
the Pareto frontier over them, and an exported model that reproduces its stored figures in ONNX Runtime."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from scipy.special import log_softmax
from scipy.stats import entropy

from backend.storage import store_from_uri
from tests.e2e.conftest import Stack

pytestmark = pytest.mark.e2e


def _logits(model: bytes | str, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def test_a_sweep_gives_points_a_frontier_and_exports_that_reproduce_them(
    make_stack: Any, demo_files: Any
) -> None:
    stack: Stack = make_stack()
    stack.add_worker("w1")
    stack.add_worker("w2")
    c = stack.client
    project = c.create_project("sweep")
    model = c.upload_model(project["id"], demo_files.golden_onnx)
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)
    inspected = c.wait_model(model["id"], timeout=120)
    assert inspected["status"] == "ready", inspected["error"]
    configs = [
        {"type": "weight_quant", "bits": 8, "per_channel": True},
        {"type": "weight_quant", "bits": 4},
        {"type": "magnitude_prune", "sparsity": 0.5},
        {
            "type": "schedule",
            "stages": [{"type": "magnitude_prune", "sparsity": 0.5}, {"type": "weight_quant", "bits": 4}],
        },
    ]
    job = c.create_job(
        project["id"],
        "sweep",
        {
            "model_id": model["id"],
            "dataset_id": dataset["id"],
            "configs": configs,
            "max_samples": 200,
            "latency_batch_sizes": [1, 8],
            "latency_repeats": 5,
        },
    )
    done = c.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    chunks = c.http.get(f"/jobs/{job['id']}/chunks").json()
    assert len(chunks) == 5 and len({ch["worker_id"] for ch in chunks}) == 2

    points = c.http.get(f"/jobs/{job['id']}/sweep/points", params={"details": True}).json()["items"]
    labels = ["fp32", "w8-sym-channel", "w4-sym-tensor", "prune-u0.5", "prune-u0.5>w4-sym-tensor"]
    assert [p["label"] for p in points] == labels
    golden, w8, w4, pruned, schedule = points
    # Cause attribution of the schedule: each stage alone equals the point that applies only that stage
    # (evaluated as its own chunk, maybe by the other worker); single techniques have none.
    split = schedule["point"]["attribution"]
    assert [t["label"] for t in split["techniques"]] == ["prune 50 %", "4-bit weights"]

    # The attribution splits the simulated figures; the objectives are the deployed file's measured ones,
    # with the simulation kept beside them (and close to it: these files reproduce the simulated weights).
    def simulated_kl(p: dict[str, Any]) -> float:
        assert p["point"]["fidelity_source"] == "measured", p["point"].get("fidelity_note")
        return float(p["point"]["fidelity_simulated"]["kl_mean"])

    assert split["metric"] == "kl_mean" and split["total"] == simulated_kl(schedule)
    assert schedule["objectives"]["kl_mean"] == pytest.approx(split["total"], rel=1e-3)
    assert split["alone"] == pytest.approx([simulated_kl(pruned), simulated_kl(w4)], rel=1e-9)
    assert split["leave_one_out"] == split["alone"][::-1] and split["cumulative"] == [
        split["alone"][0],
        split["total"],
    ]
    assert all(p["point"]["attribution"] is None for p in points[:4])
    assert golden["objectives"]["kl_mean"] == 0.0 and golden["objectives"]["top1_agreement"] == 1.0
    assert 0 < w8["objectives"]["kl_mean"] < w4["objectives"]["kl_mean"]
    assert w8["objectives"]["size_bytes"] < golden["objectives"]["size_bytes"] / 3  # int8 weights, fp32 rest
    assert pruned["objectives"]["params_kept"] < golden["objectives"]["params_kept"]
    for p in points:
        assert p["objectives"]["latency_p50_ms_b1"] > 0 and p["objectives"]["latency_p50_ms_b8"] > 0
        assert p["objectives"]["runtime_memory_mib"] > 0 and p["point"]["memory"]["batch_size"] == 1
        assert p["point"]["runtime"]["runtime_note"], p["point"]["runtime"]
    assert golden["objectives"]["latency_ratio_b1"] == 1.0
    assert golden["objectives"]["runtime_memory_ratio"] == 1.0
    # Accuracy comes from the labels of the dataset: the golden model's accuracy on the first 200 samples.
    data = np.load(demo_files.test_npz)
    x, labels = data["input"][:200], data["labels"][:200]
    p_logits = _logits(str(demo_files.golden_onnx), x)
    assert golden["objectives"]["accuracy"] == pytest.approx(float(np.mean(p_logits.argmax(1) == labels)))

    frontier = c.http.get(
        "/sweep-frontier", params={"job_ids": [job["id"]], "objective": ["kl_mean:min", "size_bytes:min"]}
    ).json()
    on_front = {p["label"] for p in frontier["frontier"]}
    assert "fp32" in on_front and "w8-sym-channel" in on_front  # least KL; smaller than fp32 with little KL
    assert frontier["knee"] is not None and frontier["n_points"] == 5

    # The exported W8 model runs in ONNX Runtime and reproduces the point's KL, computed here with scipy.
    response = c.http.get(f"/jobs/{job['id']}/sweep/points/1/export")
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        exported = archive.read("model.onnx")
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest["file_size_bytes"] == len(exported) and manifest["size_bytes"] > 0
    assert manifest["source_model_sha256"] == model["artifact_sha256"]
    q_logits = _logits(exported, x)
    kl = entropy(np.exp(log_softmax(p_logits, axis=1)), np.exp(log_softmax(q_logits, axis=1)), axis=1).mean()
    # Real int8 weights (dequantized in the graph) give exactly the simulated weights: the same KL.
    assert manifest["kind"] == "real-int8-weights" and manifest["matches_simulation"] is True
    assert kl == pytest.approx(w8["objectives"]["kl_mean"], rel=1e-3, abs=1e-9)
    assert manifest["metrics"]["measured"]["kl_mean"] == pytest.approx(kl, rel=1e-3, abs=1e-9)

    # Deleting the job deletes its exported files too; the uploaded model stays.
    store = store_from_uri(stack.settings.resolved_artifact_uri, stack.settings.data_dir / "cache")
    assert store.exists(manifest["file_sha256"])
    assert c.http.delete(f"/jobs/{job['id']}").status_code == 204
    assert not store.exists(manifest["file_sha256"]) and store.exists(model["artifact_sha256"])


def test_a_sweep_routed_to_a_device_runs_its_points_there(make_stack: Any, demo_files: Any) -> None:
    stack: Stack = make_stack(chunk_wait_s=6.0)
    pool = stack.add_worker("pool")
    device = stack.add_worker("edge", device="edge1")
    c = stack.client
    project = c.create_project("device")
    model = c.upload_model(project["id"], demo_files.golden_onnx)
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)
    assert c.wait_model(model["id"], timeout=120)["status"] == "ready"
    params = {
        "model_id": model["id"],
        "dataset_id": dataset["id"],
        "configs": [{"type": "weight_quant", "bits": 8}],
        "max_samples": 50,
        "latency_repeats": 3,
        "latency_batch_sizes": [1],
    }
    done = c.wait_job(c.create_job(project["id"], "sweep", params | {"device": "edge1"})["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    assert device.log().count("kneeboard.chunk[") >= 2 and "kneeboard.chunk[" not in pool.log()
    assert "kneeboard.sweep[" in pool.log() and "kneeboard.sweep[" not in device.log()

    # A device that no worker serves: the sweep fails, in bounded time, naming the queue.
    lost = c.wait_job(c.create_job(project["id"], "sweep", params | {"device": "nobody"})["id"], timeout=60)
    assert lost["status"] == "failed" and ".device.nobody" in lost["error"] and "--device" in lost["error"]
