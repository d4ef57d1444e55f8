"""Sensitivity jobs through the real queue: a scan split into chunks of layers over two worker processes,
merged into exactly what one uninterrupted scan computes; a worker killed mid-chunk costs that chunk only."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.e2e.conftest import SlowJobFiles, Stack

pytestmark = pytest.mark.e2e

CONFIGS = [
    {"type": "weight_quant", "bits": 8},
    {"type": "weight_quant", "bits": 4},
    {"type": "weight_quant", "bits": 2},
    {"type": "noise", "bits": 4},
]


def _upload(
    stack: Stack, model: Path, dataset: Path
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    c = stack.client
    project = c.create_project(f"sens-{model.stem}")
    m = c.upload_model(project["id"], model)
    d = c.upload_dataset(project["id"], dataset)
    assert c.wait_model(m["id"], timeout=120)["status"] == "ready"
    return project, m, d


def test_a_scan_split_over_two_workers_equals_one_uninterrupted_scan(
    make_stack: Any, demo_files: Any
) -> None:
    from worker.engine.compression import open_compressible
    from worker.engine.sensitivity.scan import layer_sensitivity

    stack: Stack = make_stack()
    stack.add_worker("w1")
    stack.add_worker("w2")
    c = stack.client
    project, model, dataset = _upload(stack, demo_files.golden_onnx, demo_files.test_npz)
    params = {
        "model_id": model["id"],
        "dataset_id": dataset["id"],
        "configs": CONFIGS,
        "max_samples": 200,
        "chunks": 3,
        "mixed_precision_bits": [5],
        "importance_methods": ["l1", "reconstruction"],
    }
    job = c.create_job(project["id"], "sensitivity", params)
    done = c.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    assert done["chunks_total"] == 3 and done["progress"] == 1.0

    chunks = c.http.get(f"/jobs/{job['id']}/chunks").json()
    assert [ch["status"] for ch in chunks] == ["succeeded"] * 3
    assert sorted(layer for ch in chunks for layer in ch["spec"]["layers"]) == ["conv1", "conv2", "fc"]
    assert len({ch["worker_id"] for ch in chunks}) == 2, "both workers must have taken chunks"

    report = c.http.get(f"/jobs/{job['id']}/sensitivity").json()
    x = np.load(demo_files.test_npz)["input"][:200]
    reference = layer_sensitivity(open_compressible(demo_files.golden_onnx, "onnx"), {"input": x}, CONFIGS)
    expected = reference.to_dict()["matrix"]
    assert report["matrix"]["rows"] == expected["rows"] and report["matrix"]["columns"] == expected["columns"]
    np.testing.assert_allclose(report["matrix"]["kl_mean"], expected["kl_mean"], rtol=1e-9)
    np.testing.assert_allclose(report["matrix"]["sqnr_db"], expected["sqnr_db"], rtol=1e-9)
    assert report["ranking"]["overall"] == reference.ranking()
    assert report["batch_size"] == 64  # the digits CNN's activations are small: the cap
    assert set(report["whole_model"]) == {cfg["id"] for cfg in report["configs"]}
    # Fewer bits, more damage: every layer's KL grows from 8 to 4 to 2 bits.
    kl = np.array(report["matrix"]["kl_mean"])
    assert np.all(kl[:, 0] < kl[:, 1]) and np.all(kl[:, 1] < kl[:, 2])

    # Channel importance by L1 norm, against the weights read straight from the ONNX file.
    graph = onnx.load(str(demo_files.golden_onnx)).graph
    weight = next(numpy_helper.to_array(t) for t in graph.initializer if t.name == "conv2.weight")
    l1 = np.abs(weight).reshape(weight.shape[0], -1).sum(axis=1)
    scores = c.http.get(
        f"/jobs/{job['id']}/sensitivity/channels", params={"layer": "conv2", "method": "l1"}
    ).json()
    assert [ch["channel"] for ch in scores["channels"]] == list(np.argsort(-l1, kind="stable"))
    np.testing.assert_allclose([ch["score"] for ch in scores["channels"]], np.sort(l1)[::-1], rtol=1e-6)
    recon = c.http.get(
        f"/jobs/{job['id']}/sensitivity/channels", params={"layer": "fc", "method": "reconstruction"}
    ).json()
    assert recon["n_channels"] == 10 and len(recon["channels"]) == 10

    plans = c.http.get(f"/jobs/{job['id']}/sensitivity/plans").json()["plans"]
    assert len(plans) == 1 and plans[0]["error"] is None, plans
    plan = plans[0]
    weights = sum(layer["weight_params"] for layer in report["layers"])
    assert plan["size_bytes"] <= plan["budget_bytes"] == pytest.approx(weights * 5 / 8)
    assert set(plan["assignments"]) == {"conv1", "conv2", "fc"}
    assert plan["measurement"]["measured"]["kl_mean"] > 0 and plan["predicted_kl"] > 0

    profile = c.http.get("/sensitivity-profiles", params={"job_ids": [job["id"]]}).json()["profiles"][0]
    assert [p["depth_fraction"] for p in profile["layers"]] == [0.0, 0.5, 1.0]
    assert sum(profile["layer_counts"].values()) == 3


def test_a_worker_killed_mid_chunk_costs_only_that_chunk(
    make_stack: Any, slow_job_files: SlowJobFiles
) -> None:
    stack: Stack = make_stack(max_attempts=2)
    doomed = stack.add_worker("doomed")
    project, model, dataset = _upload(stack, slow_job_files.model, slow_job_files.dataset)
    params = {
        "model_id": model["id"],
        "dataset_id": dataset["id"],
        "configs": [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 4}],
        "max_samples": 6000,
        "batch_size": 500,
        "whole_model": False,
        "mixed_precision_bits": [],
        "importance_methods": [],
        "threads": 1,
        "chunks": 6,
    }
    job = stack.client.create_job(project["id"], "sensitivity", params)
    deadline = time.monotonic() + 180
    while True:  # until one chunk is done and the next one is running
        chunks = stack.client.http.get(f"/jobs/{job['id']}/chunks").json()
        states = [ch["status"] for ch in chunks]
        if "succeeded" in states and "running" in states:
            break
        assert stack.client.job(job["id"])["status"] in ("queued", "running")
        assert time.monotonic() < deadline, f"the scan never got going: {states}"
        time.sleep(0.05)
    finished_before = {ch["index"] for ch in chunks if ch["status"] == "succeeded"}
    killed = next(ch["index"] for ch in chunks if ch["status"] == "running")
    doomed_id = next(ch["worker_id"] for ch in chunks if ch["status"] == "running")
    doomed.kill_group(signal.SIGKILL)
    stack.add_worker("rescuer")

    done = stack.client.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    after = {ch["index"]: ch for ch in stack.client.http.get(f"/jobs/{job['id']}/chunks").json()}
    for index in finished_before:  # kept, not computed again
        assert after[index]["attempts"] == 1 and after[index]["worker_id"] == doomed_id, after[index]
    assert after[killed]["attempts"] == 2 and after[killed]["worker_id"] != doomed_id
    report = stack.client.http.get(f"/jobs/{job['id']}/sensitivity").json()
    assert len(report["matrix"]["rows"]) == 6 and all(
        v is not None for row in report["matrix"]["kl_mean"] for v in row
    )
