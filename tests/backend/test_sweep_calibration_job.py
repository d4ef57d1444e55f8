"""Sweeps that quantize activations calibrate on samples they do not evaluate (issue 33), run in-process by
the real sweep handler over the real app and Postgres on the demo's digits CNN (ONNX).

Which samples calibrated a point is checked independently of the engine: the activation scales written into
the point's exported (simulated) ONNX file must be (max(hi, 0) − min(lo, 0)) / 255 of the golden layer
outputs that onnxruntime computes here on exactly the samples the point says calibrated it, and differ
from those of the evaluated samples. The API refuses, with words, a calibration set that does not fit the
model, the evaluation set named as its own calibration set, too few samples to split, more calibration
samples than the set has, and a calibration set for a sweep that quantizes no activation."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from scipy.special import rel_entr, softmax

from backend.api.result_schemas.sweep import SweepPointDocOut
from tests.backend.test_sweep_task_job import _run_sweep
from tests.backend.test_typed_results import extras
from tests.engine.test_activation_shift import capture
from tests.support.app_fixtures import demo_bundle_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.sweep_exports import run_onnx
from worker import fanout
from worker.demo.models import DemoBundle
from worker.jobs.sensitivity import SensitivityHandler

A8 = {"type": "activation_quant", "bits": 8}
W8 = {"type": "weight_quant", "bits": 8}


settings, http, bundle, api = demo_bundle_fixtures("sweep-calibration")


def _params(api: FidelityApi, **extra: Any) -> dict[str, Any]:
    return {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": [A8, W8],
        "batch_size": 32,
        "latency": False,
        "export": True,
        "attribution": False,
    } | extra


def _points(api: FidelityApi, job_id: str) -> list[dict[str, Any]]:
    page = api.get(f"/jobs/{job_id}/sweep/points?details=true")
    assert page.status_code == 200, page.text
    return sorted(page.json()["items"], key=lambda p: p["index"])


def _export_scales(api: FidelityApi, job_id: str, index: int) -> dict[str, float]:
    """Layer output tensor → the activation scale the point's exported file applies to it."""
    answer = api.get(f"/jobs/{job_id}/sweep/points/{index}/export")
    assert answer.status_code == 200, answer.text
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".onnx"))
        model = onnx.load_from_string(archive.read(name))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    scales = {}
    for node in model.graph.node:
        # the fake-quant chain starts with Mul(<out>__raw, kneeboard_N_inv) -> kneeboard_N_scaled
        if node.op_type == "Mul" and node.input[0].endswith("__raw") and node.output[0].endswith("_scaled"):
            prefix = node.output[0][: -len("_scaled")]
            scales[node.input[0][: -len("__raw")]] = float(inits[f"{prefix}_scale"])
    assert scales, "the export has no activation fake-quant"
    return scales


def _expected_scales(golden: Path, names: list[str], x: np.ndarray) -> dict[str, float]:
    """(max(hi, 0) − min(lo, 0)) / 255 in float32 over the golden tensors onnxruntime computes on x."""
    captured = capture(golden, names, [x])
    out = {}
    for name in names:
        lo, hi = min(float(captured[name].min()), 0.0), max(float(captured[name].max()), 0.0)
        out[name] = float(np.float32((hi - lo) / 255))
    return out


def _assert_calibrated_on(
    scales: dict[str, float], expected: dict[str, float], other: dict[str, float]
) -> None:
    for name, scale in scales.items():
        assert scale == pytest.approx(expected[name], rel=1e-6), name
    assert any(scales[n] != pytest.approx(other[n], rel=1e-6) for n in scales), (
        "evaluated samples give the same"
    )


def test_held_out_samples_calibrate_and_are_not_evaluated(
    api: FidelityApi, bundle: DemoBundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.load(bundle.test_npz)["input"]
    n, max_samples = len(x), 100
    held = min(128, n // 4)
    job_id = _run_sweep(api, _params(api, max_samples=max_samples), monkeypatch)
    points = _points(api, job_id)
    assert [p["label"] for p in points] == ["fp32", "a8-minmax", "w8-sym-tensor"]
    for p in points:
        assert list(extras(SweepPointDocOut.model_validate(p["point"]))) == []
        assert (
            p["point"]["fidelity"]["n_samples"] == max_samples
        )  # the same evaluated samples for every point
    # every point a runtime executes carries its run-time memory (measured in a child process, issue 33)
    executable = [p for p in points if p["point"]["runtime"]["executable"]]
    assert [p["label"] for p in executable][:1] == ["fp32"] and len(executable) >= 2
    for p in points:
        memory, objectives = p["point"]["memory"], p["objectives"]
        if p not in executable:
            assert memory is None and "runtime_memory_mib" not in objectives
            continue
        assert objectives["runtime_memory_mib"] == memory["session_mib"] > 0
        assert objectives["peak_rss_mib"] == memory["peak_rss_mib"] > memory["baseline_rss_mib"] > 0
        assert memory["batch_size"] == 1 and memory["file"] == p["point"]["exports"][-1]["file"]
        assert objectives["runtime_memory_ratio"] == pytest.approx(
            memory["session_mib"] / executable[0]["point"]["memory"]["session_mib"]
        )
    fp32, a8, w8 = (p["point"] for p in points)
    assert fp32["calibration"] is None and w8["calibration"] is None  # nothing of theirs was calibrated
    calibration = a8["calibration"]
    assert calibration["source"] == "held_out" and calibration["dataset_id"] == api.dataset
    assert (calibration["start"], calibration["stop"], calibration["count"]) == (0, held, held)
    assert calibration["evaluation_dataset_id"] == api.dataset
    assert (calibration["evaluation_start"], calibration["evaluation_stop"]) == (held, held + max_samples)
    assert calibration["disjoint"] is True and "held out" in calibration["rule"]
    assert a8["exports"][-1]["kind"] == "simulated-float"

    scales = _export_scales(api, job_id, 1)
    names = sorted(scales)
    _assert_calibrated_on(
        scales,
        _expected_scales(bundle.golden_onnx, names, x[:held]),
        _expected_scales(bundle.golden_onnx, names, x[held : held + max_samples]),
    )


def test_a_named_calibration_set_calibrates_and_the_whole_evaluation_set_is_evaluated(
    api: FidelityApi, bundle: DemoBundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.load(bundle.test_npz)["input"]
    calib = np.clip(x[::-1] * np.float32(1.5), 0, 2).astype(np.float32)  # other samples, other ranges
    np.savez(tmp_path / "calib.npz", input=calib[:50], labels=np.zeros(50, dtype=np.int64))
    calib_id = api.upload("datasets", tmp_path / "calib.npz")
    params = _params(api, max_samples=120, calibration_dataset_id=calib_id, calibration_samples=40)
    job_id = _run_sweep(api, params, monkeypatch)
    a8 = _points(api, job_id)[1]["point"]
    calibration = a8["calibration"]
    assert calibration["source"] == "calibration_dataset" and calibration["dataset_id"] == calib_id
    assert (calibration["start"], calibration["stop"], calibration["count"]) == (0, 40, 40)
    assert (calibration["evaluation_start"], calibration["evaluation_stop"]) == (0, 120)
    assert calibration["disjoint"] is True and a8["fidelity"]["n_samples"] == 120
    assert a8["exports"][-1]["calibration"] == calibration  # the download's manifest says it too
    scales = _export_scales(api, job_id, 1)
    names = sorted(scales)
    _assert_calibrated_on(
        scales,
        _expected_scales(bundle.golden_onnx, names, calib[:40]),
        _expected_scales(bundle.golden_onnx, names, x[:120]),
    )


def _run_fanout(
    api: FidelityApi, kind: str, params: dict[str, Any], handler: Any, monkeypatch: pytest.MonkeyPatch
) -> str:
    job = api.post("/jobs", json={"project_id": api.project, "kind": kind, "params": params})
    sent: list[int] = []
    monkeypatch.setattr(
        fanout, "enqueue_chunk", lambda settings, job_id, index, queue=None: sent.append(index)
    )
    planned = fanout.execute_fanout_job(job["id"], handler, api.settings)
    assert planned == "fanned out", api.get(f"/jobs/{job['id']}").json().get("error")
    outcomes = [fanout.execute_chunk(job["id"], index, handler, api.settings) for index in sorted(sent)]
    assert outcomes[-1] == "succeeded", outcomes
    return str(job["id"])


def _refusal(api: FidelityApi, params: dict[str, Any], kind: str = "sweep") -> str:
    answer = api.http.post(
        "/api/v1/jobs",
        headers=api.headers,
        json={"project_id": api.project, "kind": kind, "params": params},
    )
    assert answer.status_code == 422, answer.text
    return str(answer.json())


def test_bad_calibration_requests_are_refused_at_launch_with_words(
    api: FidelityApi, bundle: DemoBundle, tmp_path: Path
) -> None:
    x = np.load(bundle.test_npz)["input"]
    np.savez(tmp_path / "flat.npz", input=x.reshape(len(x), 64)[:20])
    flat = api.upload("datasets", tmp_path / "flat.npz")
    assert "expects shape (?, 1, 8, 8) but the calibration dataset gives (20, 64)" in _refusal(
        api, _params(api, calibration_dataset_id=flat)
    )
    np.savez(tmp_path / "three.npz", input=x[:3])
    three = api.upload("datasets", tmp_path / "three.npz")
    assert "has 3 samples: too few to hold out calibration samples" in _refusal(
        api, _params(api, dataset_id=three)
    )
    assert "names the evaluation dataset itself" in _refusal(
        api, _params(api, calibration_dataset_id=api.dataset)
    )
    again = api.upload("datasets", bundle.test_npz)  # the same bytes uploaded twice are the same samples
    assert "names the evaluation dataset itself" in _refusal(api, _params(api, calibration_dataset_id=again))
    assert "calibration_samples is 30 but the calibration dataset has only 3 samples" in _refusal(
        api, _params(api, calibration_dataset_id=three, calibration_samples=30)
    )
    assert "more than calibration_samples" in _refusal(api, _params(api, calibration_samples=len(x)))
    assert "no configuration of this sweep quantizes activations" in _refusal(
        api, _params(api, configs=[W8], calibration_dataset_id=three)
    )
    scan = {"model_id": api.golden, "dataset_id": three, "configs": [A8]}
    assert "has 3 samples: too few to hold out calibration samples" in _refusal(api, scan, "sensitivity")
    scan |= {"dataset_id": api.dataset, "calibration_dataset_id": flat}
    assert "expects shape (?, 1, 8, 8)" in _refusal(api, scan, "sensitivity")


def _kl_mean(golden: np.ndarray, compressed: np.ndarray) -> float:
    """scipy's KL(P‖Q) per sample over softmaxed logits, averaged."""
    p, q = softmax(golden.astype(np.float64), axis=1), softmax(compressed.astype(np.float64), axis=1)
    return float(np.mean(rel_entr(p, q).sum(axis=1)))


def test_a_scan_calibrates_on_held_out_samples_too(
    api: FidelityApi, bundle: DemoBundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan's whole-model a8 divergence equals scipy's KL between the golden model and the sweep's a8
    export (whose scales the test above checks against onnxruntime captures) on the evaluated samples."""
    x = np.load(bundle.test_npz)["input"]
    held, max_samples = min(128, len(x) // 4), 100
    common = {"configs": [A8, W8], "max_samples": max_samples}
    scan_params = {"model_id": api.golden, "dataset_id": api.dataset, "mixed_precision_bits": []} | common
    scan_id = _run_fanout(api, "sensitivity", scan_params, SensitivityHandler(), monkeypatch)
    report = api.get(f"/jobs/{scan_id}/sensitivity").json()
    calibration = report["calibration"]
    assert (calibration["source"], calibration["start"], calibration["stop"]) == ("held_out", 0, held)
    assert (calibration["evaluation_start"], calibration["evaluation_stop"]) == (held, held + max_samples)
    assert calibration["disjoint"] is True and report["n_samples"] == max_samples
    assert api.get(f"/jobs/{scan_id}/sensitivity/plans").json()["calibration"] == calibration

    sweep_id = _run_sweep(api, _params(api, **common), monkeypatch)
    answer = api.get(f"/jobs/{sweep_id}/sweep/points/1/export")
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".onnx"))
        (tmp_path / "a8.onnx").write_bytes(archive.read(name))
    evaluated = x[held : held + max_samples]
    expected = _kl_mean(run_onnx(bundle.golden_onnx, evaluated), run_onnx(tmp_path / "a8.onnx", evaluated))
    assert report["whole_model"]["a8-minmax"]["kl_mean"] == pytest.approx(expected, rel=1e-4, abs=1e-9)
