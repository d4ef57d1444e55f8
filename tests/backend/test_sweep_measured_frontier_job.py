"""A sweep point's frontier fidelity is the deployed file's (issues 31 and 33): the real sweep handler, run
in-process over the real app and Postgres on the demo's digits CNN (ONNX).

The w8+a8 point's deployable form is onnxruntime's int8 QDQ file (quantize_static: ORT's own scales, Q/DQ on
op inputs), which does not compute what the simulation computes. Its objectives must be that file's figures,
checked independently of the engine: the exported file is downloaded, run here in onnxruntime on the samples
the point says it evaluated, and scipy's KL(P‖Q) over softmaxed logits against the golden file's outputs (and
the top-1 agreement and accuracy, by numpy) must equal the stored objectives; the simulated figures stay
beside them and differ. The activation-only point has no runtime form: it keeps the simulation and says so."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.api.result_schemas.sweep import SweepPointDocOut
from tests.backend.test_sweep_calibration_job import _kl_mean
from tests.backend.test_sweep_task_job import _run_sweep
from tests.backend.test_typed_results import extras
from tests.support.app_fixtures import demo_bundle_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.sweep_exports import run_onnx
from worker.demo.models import DemoBundle

W8A8 = {
    "type": "quantize",
    "weights": {"type": "weight_quant", "bits": 8},
    "activations": {"type": "activation_quant", "bits": 8},
}
A8 = {"type": "activation_quant", "bits": 8}

settings, http, bundle, api = demo_bundle_fixtures("sweep-measured-frontier")


def _export(api: FidelityApi, job_id: str, index: int, out: Path) -> Path:
    answer = api.get(f"/jobs/{job_id}/sweep/points/{index}/export")
    assert answer.status_code == 200, answer.text
    with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".onnx"))
        out.write_bytes(archive.read(name))
    return out


def test_the_frontier_scores_the_deployed_int8_file_not_the_simulation(
    api: FidelityApi, bundle: DemoBundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = np.load(bundle.test_npz)
    x, y = data["input"], data["labels"]
    max_samples = 120
    held = min(128, len(x) // 4)  # activation configs calibrate on held-out samples (the split's rule)
    params: dict[str, Any] = {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": [W8A8, A8],
        "batch_size": 32,
        "max_samples": max_samples,
        "latency": False,
        "memory": False,
        "export": True,
        "attribution": False,
    }
    job_id = _run_sweep(api, params, monkeypatch)
    page = api.get(f"/jobs/{job_id}/sweep/points?details=true")
    assert page.status_code == 200, page.text
    points = sorted(page.json()["items"], key=lambda p: p["index"])
    assert [p["label"] for p in points] == ["fp32", "w8-sym-tensor+a8-minmax", "a8-minmax"]
    for p in points:
        assert list(extras(SweepPointDocOut.model_validate(p["point"]))) == []
    fp32, qdq, a8 = points

    point, objectives = qdq["point"], qdq["objectives"]
    assert point["exports"][-1]["kind"] == "real-int8-qdq"
    assert (point["fidelity_source"], point["fidelity_export_kind"]) == ("measured", "real-int8-qdq")
    assert point["fidelity_note"] == "measured on the deployed file (real-int8-qdq)"
    start, stop = point["calibration"]["evaluation_start"], point["calibration"]["evaluation_stop"]
    assert (start, stop) == (held, held + max_samples)
    evaluated, labels = x[start:stop], y[start:stop]
    golden = run_onnx(bundle.golden_onnx, evaluated)
    deployed = run_onnx(_export(api, job_id, qdq["index"], tmp_path / "qdq.onnx"), evaluated)
    kl = _kl_mean(golden, deployed)
    assert objectives["kl_mean"] == pytest.approx(kl, rel=1e-4, abs=1e-9)
    agreement = float(np.mean(golden.argmax(1) == deployed.argmax(1)))
    assert objectives["top1_agreement"] == pytest.approx(agreement, abs=1e-12)
    assert objectives["accuracy"] == pytest.approx(float(np.mean(deployed.argmax(1) == labels)), abs=1e-12)
    assert point["fidelity"]["kl_mean"] == objectives["kl_mean"]
    # the simulation is kept beside, and it is not the file: ORT's scales and Q/DQ placement differ
    simulated = point["fidelity_simulated"]
    assert simulated is not None and simulated["n_samples"] == max_samples
    assert simulated["kl_mean"] != pytest.approx(kl, rel=1e-3), (simulated["kl_mean"], kl)

    # the golden point's deployed file is the fp32 model itself: measured, KL 0
    assert (fp32["point"]["fidelity_source"], fp32["point"]["fidelity_export_kind"]) == ("measured", "fp32")
    assert fp32["objectives"]["kl_mean"] == pytest.approx(0.0, abs=1e-9)

    # activations alone have no runtime form: the simulation stays, and the point says so
    assert a8["point"]["runtime"]["executable"] is False
    assert (a8["point"]["fidelity_source"], a8["point"]["fidelity_export_kind"]) == ("simulated", None)
    assert a8["point"]["fidelity_simulated"] is None
    assert "no runnable export" in a8["point"]["fidelity_note"]
    assert a8["objectives"]["kl_mean"] == a8["point"]["fidelity"]["kl_mean"]
    assert a8["objectives"]["kl_mean"] == pytest.approx(
        _kl_mean(golden, run_onnx(_export(api, job_id, a8["index"], tmp_path / "a8.onnx"), evaluated)),
        rel=1e-4,
    )  # its simulated file reproduces the simulation (ONNX golden: the same graph)
