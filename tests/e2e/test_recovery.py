"""A recovery job through the real queue: the digits CNN (a .pt2 program trained here) with 4-bit
per-channel weights, equalization → AdaRound → bias correction; the recovered model is a new model of the
project with its lineage, and its download runs in onnxruntime and reproduces the stored "after" figures
(KL recomputed with scipy on the same held-out split)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
import torch
from scipy.special import rel_entr, softmax

from tests.e2e.conftest import Stack
from worker.demo.models import export_onnx, export_torch_program, load_digits_split, train_digits_cnn
from worker.jobs.recovery import split_indices

pytestmark = pytest.mark.e2e

N = 360
HELDOUT = 0.5


def test_a_recovery_job_stores_a_recovered_model_that_reproduces_its_figures(
    make_stack: Any, tmp_path: Path
) -> None:
    split = load_digits_split(seed=0)
    cnn = train_digits_cnn(split, seed=0)
    program = export_torch_program(cnn, split.x_test[:2], tmp_path / "cnn.pt2")
    x, labels = split.x_test[:N], split.y_test[:N]
    np.savez(tmp_path / "digits.npz", x=x, labels=labels)

    stack: Stack = make_stack()
    stack.add_worker("w1")
    c = stack.client
    project = c.create_project("recovery")
    model = c.upload_model(project["id"], program)
    dataset = c.upload_dataset(project["id"], tmp_path / "digits.npz")
    assert c.wait_model(model["id"], timeout=120)["status"] == "ready"
    params = {
        "golden_model_id": model["id"],
        "dataset_id": dataset["id"],
        "config": {"type": "weight_quant", "bits": 4, "per_channel": True},
        "heldout_fraction": HELDOUT,
        "methods": [
            {"name": "equalization"},
            {"name": "adaround", "iterations": 300},
            {"name": "bias_correction"},
        ],
    }
    response = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": params})
    assert response.status_code == 201, response.text
    job = response.json()
    done = c.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]

    summary = c.http.get(f"/jobs/{job['id']}/recovery").json()
    assert [s["method"] for s in summary["steps"]] == [
        "before",
        "equalization",
        "adaround",
        "bias_correction",
    ]
    assert summary["after"]["kl_mean"] < summary["before"]["kl_mean"]
    recovered = c.http.get(f"/models/{summary['model_id']}").json()
    assert recovered["status"] == "ready" and recovered["format"] == "onnx"
    lineage = recovered["lineage"]
    assert lineage["parent_model_id"] == model["id"] and lineage["job_id"] == job["id"]
    assert lineage["dataset_id"] == dataset["id"] and lineage["point_id"] == "w4-sym-channel"
    assert [m["name"] for m in lineage["methods"]] == ["equalization", "adaround", "bias_correction"]
    assert recovered["name"] == f"{model['name']} · w4-sym-channel · CLE + AdaRound + bias correction"

    download = c.http.get(f"/jobs/{job['id']}/recovery/model")
    assert download.status_code == 200
    _, held = split_indices(N, HELDOUT)
    session = ort.InferenceSession(download.content, providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: x[held]})[0].astype(np.float64)
    with torch.no_grad():
        ref = cnn(torch.from_numpy(x[held])).numpy().astype(np.float64)
    kl = rel_entr(softmax(ref, axis=1), softmax(out, axis=1)).sum(axis=1).mean()
    np.testing.assert_allclose(kl, summary["export"]["measured"]["kl_mean"], rtol=1e-5)
    np.testing.assert_allclose(kl, summary["after"]["kl_mean"], rtol=1e-3)
    accuracy = float((out.argmax(axis=1) == labels[held]).mean())
    assert accuracy == pytest.approx(summary["after"]["accuracy_compressed"])

    # "recover this" from a sweep point: the point's configuration, by its id '<sweep job id>:<index>'
    sweep = c.create_job(
        project["id"],
        "sweep",
        {
            "model_id": model["id"],
            "dataset_id": dataset["id"],
            "configs": [{"type": "weight_quant", "bits": 4, "per_channel": True}],
            "max_samples": 64,
            "latency": False,
        },
    )
    assert c.wait_job(sweep["id"], timeout=300)["status"] == "succeeded"  # with the .pt2 model's exports
    point = c.http.get(f"/jobs/{sweep['id']}/sweep/points/1").json()
    assert point["export_available"], point
    from_point = {k: v for k, v in params.items() if k != "config"} | {
        "sweep_point_id": f"{sweep['id']}:1",
        "methods": [{"name": "bias_correction"}],
    }
    response = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": from_point})
    assert response.status_code == 201, response.text
    assert c.wait_job(response.json()["id"], timeout=300)["status"] == "succeeded"
    second = c.http.get(f"/jobs/{response.json()['id']}/recovery").json()
    assert (
        second["lineage"]["sweep_point_id"] == f"{sweep['id']}:1" and second["point_id"] == "w4-sym-channel"
    )
    assert second["before"]["kl_mean"] == pytest.approx(
        summary["before"]["kl_mean"]
    )  # same config, same split
    fp32 = from_point | {"sweep_point_id": f"{sweep['id']}:0"}  # the golden point: nothing to recover
    refused = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": fp32})
    assert refused.status_code == 422 and "uncompressed" in refused.json()["detail"]

    # An ONNX golden model: QAT trains a torch module, refused before queuing; AdaRound and bias correction run
    # on it.
    onnx_golden = c.upload_model(project["id"], export_onnx(cnn, split.x_test[:2], tmp_path / "cnn.onnx"))
    assert c.wait_model(onnx_golden["id"], timeout=120)["status"] == "ready"
    bad = dict(params, golden_model_id=onnx_golden["id"], methods=[{"name": "qat"}])
    refused = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": bad})
    assert refused.status_code == 422 and "qat need(s) a torch.export" in refused.json()["detail"]
    on_onnx = dict(bad, methods=params["methods"][1:])
    response = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": on_onnx})
    assert response.status_code == 201, response.text
    assert c.wait_job(response.json()["id"], timeout=300)["status"] == "succeeded"
    third = c.http.get(f"/jobs/{response.json()['id']}/recovery").json()
    assert [s["method"] for s in third["steps"]] == ["before", "adaround", "bias_correction"]
    assert third["after"]["kl_mean"] < third["before"]["kl_mean"]
    assert (
        c.http.get(f"/models/{third['model_id']}").json()["lineage"]["parent_model_id"] == onnx_golden["id"]
    )
    np.testing.assert_allclose(third["export"]["measured"]["kl_mean"], third["after"]["kl_mean"], rtol=1e-3)

    # Before/after per sample and per layer. Per sample: the held-out samples' KL and top-1 match, whose
    # means are the summary's figures.
    for doc in (summary, third):
        samples = doc["per_sample"]
        assert (
            len(samples["kl_before"])
            == len(samples["kl_after"])
            == doc["n_heldout"]
            == len(doc["heldout_index"])
        )
        assert np.mean(samples["kl_before"]) == pytest.approx(doc["before"]["kl_mean"], rel=1e-9)
        assert np.mean(samples["kl_after"]) == pytest.approx(doc["after"]["kl_mean"], rel=1e-9)
        assert np.mean(samples["top1_after"]) == pytest.approx(doc["after"]["top1_agreement"], rel=1e-9)
    assert sorted(summary["heldout_index"]) == sorted(int(i) for i in held)
    # the calibration split is the rest of the first N samples: named, counted and never measured (issue 33)
    calibration = summary["calibration"]
    assert calibration["indices"] == sorted(set(range(N)) - {int(i) for i in held})
    assert calibration["count"] == summary["n_calibration"] and calibration["disjoint"] is True
    # Per layer: the ONNX golden model's layers profiled against both exported models, matched by name; the
    # recovered model is closer to the golden one at the output.
    # A mixed-precision plan of a sensitivity scan of the ONNX golden model, recovered as such.
    scan = c.create_job(
        project["id"],
        "sensitivity",
        {
            "model_id": onnx_golden["id"],
            "dataset_id": dataset["id"],
            "configs": [{"type": "weight_quant", "bits": b, "per_channel": True} for b in (8, 4)],
            "max_samples": 64,
            "mixed_precision_bits": [6],
        },
    )
    assert c.wait_job(scan["id"], timeout=300)["status"] == "succeeded"
    [plan] = c.http.get(f"/jobs/{scan['id']}/sensitivity/plans").json()["plans"]
    from_plan = {k: v for k, v in on_onnx.items() if k != "config"} | {
        "sensitivity_plan": {"job_id": scan["id"], "average_bits": 6},
        "methods": [{"name": "bias_correction"}],
    }
    wrong = from_plan | {"sensitivity_plan": {"job_id": scan["id"], "average_bits": 5}}
    refused = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": wrong})
    assert refused.status_code == 422 and "no plan of 5.0 average bits" in refused.json()["detail"], (
        refused.text
    )
    response = c.http.post("/recovery-jobs", json={"project_id": project["id"], "params": from_plan})
    assert response.status_code == 201, response.text
    assert c.wait_job(response.json()["id"], timeout=300)["status"] == "succeeded"
    fourth = c.http.get(f"/jobs/{response.json()['id']}/recovery").json()
    assert fourth["lineage"]["sensitivity_plan"] == {"job_id": scan["id"], "average_bits": 6.0}
    configs = {layer: plan["configs"][config_id] for layer, config_id in plan["assignments"].items()}
    assert {layer: c["bits"] for layer, c in fourth["lineage"]["plan"].items()} == {
        layer: c["bits"] for layer, c in configs.items()
    }
    assert fourth["after"]["kl_mean"] < fourth["before"]["kl_mean"]

    pt2_layers = c.http.get(f"/jobs/{job['id']}/recovery/layers").json()  # across formats, by module call
    assert {row["name"] for row in pt2_layers["after"]["layers"]} >= {"conv1", "conv2", "fc"}
    layers = c.http.get(f"/jobs/{response.json()['id']}/recovery/layers").json()
    names = [row["name"] for row in layers["before"]["layers"]]
    assert names == [row["name"] for row in layers["after"]["layers"]] and len(names) >= 3
    last = {side: layers[side]["layers"][-1]["accumulated"]["sqnr_db"] for side in ("before", "after")}
    assert last["after"] > last["before"], last
