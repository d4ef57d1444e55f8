"""Distillation / QAT recovery jobs through the real queue on the digits CNN (a .pt2 program trained here),
4-bit per-channel weights: a QAT job stores its loss curve and a recovered model whose runtime form holds
4-bit integers and reproduces the stored held-out KL in onnxruntime (recomputed with scipy); a long QAT job
shows its training steps (loss) in the job's progress while it runs and stops when cancelled."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import numpy_helper
from scipy.special import rel_entr, softmax

from tests.e2e.conftest import Stack
from worker.demo.models import export_torch_program, load_digits_split, train_digits_cnn
from worker.jobs.recovery import split_indices

pytestmark = pytest.mark.e2e

N = 600
HELDOUT = 0.3
CONFIG = {"type": "weight_quant", "bits": 4, "per_channel": True}


def test_qat_jobs_store_their_curve_stream_their_steps_and_cancel(make_stack: Any, tmp_path: Path) -> None:
    split = load_digits_split(seed=0)
    cnn = train_digits_cnn(split, seed=0)
    program = export_torch_program(cnn, split.x_test[:2], tmp_path / "cnn.pt2")
    x, labels = split.x_train[:N], split.y_train[:N]
    np.savez(tmp_path / "digits.npz", x=x, labels=labels)

    stack: Stack = make_stack()
    worker = stack.add_worker("w1")
    c = stack.client
    project = c.create_project("recovery-training")
    model = c.upload_model(project["id"], program)
    dataset = c.upload_dataset(project["id"], tmp_path / "digits.npz")
    assert c.wait_model(model["id"], timeout=120)["status"] == "ready"
    base = {"golden_model_id": model["id"], "dataset_id": dataset["id"], "config": CONFIG}

    qat = {"name": "qat", "steps": 120, "eval_every": 20, "alpha": 0.3}
    params = base | {"heldout_fraction": HELDOUT, "methods": [qat]}
    response = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": params})
    assert response.status_code == 201, response.text
    job = response.json()
    assert c.wait_job(job["id"], timeout=300)["status"] == "succeeded"
    summary = c.http.get(f"/jobs/{job['id']}/recovery").json()
    step = summary["steps"][-1]
    assert [s["method"] for s in summary["steps"]] == ["before", "qat"]
    curve = step["details"]["curve"]
    assert len(curve) == step["details"]["steps_run"] and curve[0]["step"] == 1
    assert [p["step"] for p in curve if p["heldout_kl"] is not None][:2] == [20, 40]
    assert step["details"]["training_params"]["alpha"] == 0.3 and step["details"]["labelled"]
    assert summary["after"]["kl_mean"] < summary["before"]["kl_mean"]
    assert summary["lineage"]["methods"][0]["steps"] == 120

    download = c.http.get(f"/jobs/{job['id']}/recovery/model")
    assert download.status_code == 200
    graph = onnx.load_from_string(download.content).graph
    int8 = [numpy_helper.to_array(t) for t in graph.initializer if t.data_type == onnx.TensorProto.INT8]
    integers = [q for q in int8 if q.ndim >= 2]  # the weights (the zero points are vectors of 0)
    assert len(integers) == 3 and all(np.abs(q).max() == 7 for q in integers)  # 4-bit values in int8
    _, held = split_indices(N, HELDOUT)
    session = ort.InferenceSession(download.content, providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: x[held]})[0].astype(np.float64)
    with torch.no_grad():
        ref = cnn(torch.from_numpy(x[held])).numpy().astype(np.float64)
    kl = rel_entr(softmax(ref, axis=1), softmax(out, axis=1)).sum(axis=1).mean()
    np.testing.assert_allclose(kl, summary["after"]["kl_mean"], rtol=1e-3)

    # a long run: its steps show in the job's progress; cancel stops it between steps
    long = {"name": "qat", "steps": 1_000_000, "eval_every": 50, "patience": 0}
    response = c.http.post(
        "/recovery-jobs", json={"project_id": project["id"], "params": base | {"methods": [long]}}
    )
    assert response.status_code == 201, response.text
    job = response.json()
    deadline = time.monotonic() + 180
    seen: set[str] = set()
    while not seen:  # (the messages written are throttled: not every step's, so rarely one with a KL)
        state = c.job(job["id"])
        assert state["status"] in ("queued", "running"), state
        assert time.monotonic() < deadline, f"no training step in the progress: {state}"
        if (state.get("progress_message") or "").startswith("qat step"):
            seen.add(state["progress_message"])
        time.sleep(0.2)
    assert all(" loss " in m for m in seen), seen
    response = c.http.post(f"/jobs/{job['id']}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    worker.wait_for_log("'cancelled'", timeout=60)
    final = c.job(job["id"])
    assert final["status"] == "cancelled" and final["progress"] < 1.0
    assert c.http.get(f"/jobs/{job['id']}/recovery").status_code == 409
