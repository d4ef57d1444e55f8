"""A sweep's accuracy-aware search (issue 33) through the real app, Postgres and the real sweep and
sensitivity handlers (run in-process) on the demo's digits CNN: every measured step is a stored point
labelled search-k<k>, GET /jobs/{id}/sweep/search serves the steps and the returned plan (typed), and the
returned plan's downloaded export, run in onnxruntime here, agrees with the golden model's top-1 as often
as the search says. Bad search params are refused at launch with words."""

from __future__ import annotations

import io
import uuid
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.api.result_schemas.sweep_search import SweepSearchOut
from backend.contracts import RESULT_SENSITIVITY, JobKind
from backend.db.models import JobResult, JobStatus
from backend.db.session import session_factory
from backend.services.jobs import new_job
from tests.backend.test_sweep_calibration_job import _refusal, _run_fanout
from tests.backend.test_sweep_task_job import _run_sweep
from tests.support.app_fixtures import demo_bundle_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.sweep_exports import run_onnx
from worker.demo.models import DemoBundle
from worker.jobs.sensitivity import SensitivityHandler

W2 = {"type": "weight_quant", "bits": 2, "per_channel": True}
W8 = {"type": "weight_quant", "bits": 8, "per_channel": True}

settings, http, bundle, api = demo_bundle_fixtures("sweep-search")


def _sweep(api: FidelityApi, **search: Any) -> dict[str, Any]:
    return {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": [],
        "search": {"low": W2, "high": W8, "threshold": 0.99} | search,
        "max_samples": 300,
        "batch_size": 64,
        "latency_batch_sizes": [1],
        "latency_repeats": 3,
        "attribution": False,
    }


def _scan(api: FidelityApi, monkeypatch: pytest.MonkeyPatch) -> str:
    params = {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": [W2],
        "max_samples": 200,
        "mixed_precision_bits": [],
        "importance_methods": [],
    }
    return _run_fanout(api, "sensitivity", params, SensitivityHandler(), monkeypatch)


@pytest.mark.slow
def test_a_sweep_stores_the_search_steps_and_its_plan(
    api: FidelityApi, bundle: DemoBundle, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scan = _scan(api, monkeypatch)
    sweep = _run_sweep(api, _sweep(api, sensitivity_job_id=scan), monkeypatch)

    answer = api.get(f"/jobs/{sweep}/sweep/search")
    assert answer.status_code == 200, answer.text
    search = SweepSearchOut.model_validate(answer.json())
    points = {p["index"]: p for p in api.get(f"/jobs/{sweep}/sweep/points?details=true").json()["items"]}
    assert points[0]["label"] == "fp32"
    assert [p["label"] for i, p in sorted(points.items()) if i > 0] == [
        f"search-k{s.k}" for s in search.steps
    ]
    assert search.direction == "at_least" and search.metric == "top1_agreement" and search.steps[0].k == 0
    for step in search.steps:  # each step is its point, its value the point's own objective
        point = points[step.index]
        assert point["config"]["type"] == "search_step" and point["config"]["k"] == step.k
        assert point["objectives"]["top1_agreement"] == pytest.approx(step.value, abs=1e-12)
        assert step.holds == (step.value is not None and step.value >= 0.99)
        assert point["objectives"]["size_bytes"] == pytest.approx(step.size_bytes)
    assert search.met, search.notes
    assert len(search.steps) >= 3, "2-bit weights everywhere must miss (the ladder is then searched)"
    assert search.k is not None and search.k == search.best_k
    by_k = {s.k: s for s in search.steps}
    assert by_k[search.k].holds and (search.k == 0 or not by_k[search.k - 1].holds), search.steps
    assert set(search.plan) == {"conv1", "conv2", "fc"}
    assert sorted(search.plan.values()).count("w8-sym-channel") == search.k

    returned = points[search.returned_index]
    assert returned["export_available"] and returned["point"]["latency"] is not None
    assert returned["config"]["returned"] is True
    assert all(points[s.index]["point"]["latency"] is None for s in search.steps if s.k != search.k)

    # independent: the returned plan's export, run here, against the golden file on the evaluated samples
    download = api.get(f"/jobs/{sweep}/sweep/points/{search.returned_index}/export")
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".onnx"))
        (tmp_path / "returned.onnx").write_bytes(archive.read(name))
    x = np.load(bundle.test_npz)["input"][:300]
    agree = run_onnx(tmp_path / "returned.onnx", x).argmax(1) == run_onnx(bundle.golden_onnx, x).argmax(1)
    assert float(np.mean(agree)) == pytest.approx(search.best_value, abs=1e-9)
    # the verdict on the exported file: its measured metric (this per-layer int8-weights file computes what
    # the simulation computes, so it holds as the step did)
    deployed = search.deployed
    assert deployed is not None and (deployed.source, deployed.export_kind) == (
        "measured",
        "real-int8-weights",
    )
    assert deployed.value == pytest.approx(float(np.mean(agree)), abs=1e-9) and deployed.holds
    assert deployed.note in search.notes

    assert api.get(f"/jobs/{scan}/sensitivity").status_code == 200
    assert api.get(f"/jobs/{scan}/sweep/search").status_code == 422  # not a sweep


def test_bad_search_params_are_refused_with_words(api: FidelityApi) -> None:
    project = uuid.UUID(api.project)
    other = new_job(project, JobKind.sensitivity, {"model_id": str(uuid.uuid4())}, None)
    all_but = new_job(project, JobKind.sensitivity, {"model_id": api.golden}, None)
    fidelity = new_job(project, JobKind.fidelity, {"golden_model_id": api.golden}, None)
    for job in (other, all_but, fidelity):
        job.status = JobStatus.succeeded.value
    with session_factory(api.settings.resolved_database_url)() as session:
        session.add_all([other, all_but, fidelity])
        session.flush()
        session.add(JobResult(job_id=all_but.id, key=RESULT_SENSITIVITY, payload={"mode": "all_but"}))
        session.commit()

    said = _refusal(api, _sweep(api, sensitivity_job_id=str(other.id)))
    assert f"params.search.sensitivity_job_id: job {other.id} scanned another model" in said
    said = _refusal(api, _sweep(api, sensitivity_job_id=str(all_but.id)))
    assert "a 'all_but' result; the search ranks layers by an 'only' scan" in said
    said = _refusal(api, _sweep(api, sensitivity_job_id=str(fidelity.id)))
    assert f"job {fidelity.id} is a fidelity job" in said
    said = _refusal(api, _sweep(api, sensitivity_job_id=str(other.id), metric="top5_agreement"))
    assert "search.metric 'top5_agreement' is not a measured objective" in said and "kl_mean" in said
    said = _refusal(api, _sweep(api, sensitivity_job_id=str(other.id), metric="task.miou_drop"))
    assert "task.miou_drop is not a metric of task 'auto'" in said
    said = _refusal(api, _sweep(api, sensitivity_job_id=str(other.id), direction="above"))
    assert "at_least" in said
