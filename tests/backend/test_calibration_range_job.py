"""A fidelity job with a calibration set, run in-process by the real handlers on the demo's digits CNN
(float ONNX against its int8 QDQ copy) over the real app and Postgres: every profiled layer's
calibration range and the share of evaluation values outside it are stored and served typed by
GET /jobs/{id}/fidelity/layers, and equal numpy's on activations the test captures itself with onnxruntime;
a calibration set the model cannot run leaves a note while the report and the profile stand; the API
refuses another project's dataset (404), garbage (422) and a calibration set without a profile (422)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend.api.app import create_app
from backend.api.schemas import LayerProfileOut
from backend.contracts import RESULT_FIDELITY_LAYERS
from backend.db.models import JobResult
from backend.db.session import session_factory
from backend.settings import Settings
from tests.backend.test_robustness_job import Api
from tests.backend.test_typed_results import missing
from tests.conftest import truncate_all
from tests.engine.test_activation_shift import capture
from tests.support.services import stack_settings
from worker.demo.models import DemoBundle, write_demo_bundle


@pytest.fixture(scope="module")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("calibration_job"), "calibration")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> DemoBundle:
    return write_demo_bundle(tmp_path_factory.mktemp("calibration_demo"))


@pytest.fixture
def api(settings: Settings, pg_url: str, bundle: DemoBundle) -> Iterator[Api]:
    truncate_all(pg_url)
    with TestClient(create_app(settings, run_reaper=False)) as http:
        yield Api(http, settings, bundle)
    truncate_all(pg_url)


def stored_profile(settings: Settings, job_id: str) -> dict[str, Any]:
    with session_factory(settings.resolved_database_url)() as s:
        return s.execute(
            select(JobResult.payload).where(
                JobResult.job_id == uuid.UUID(job_id), JobResult.key == RESULT_FIDELITY_LAYERS
            )
        ).scalar_one()


def test_the_calibration_range_is_stored_and_served(api: Api, bundle: DemoBundle, tmp_path: Path) -> None:
    """The demo digits halved (with labels, which the profile leaves out) as the calibration set; 40 of
    them are used."""
    digits = np.load(bundle.test_npz)
    halved = (digits["input"] * np.float32(0.5)).astype(np.float32)
    np.savez(tmp_path / "halved.npz", input=halved, labels=digits["labels"])
    calibration = api.upload("datasets", tmp_path / "halved.npz")
    job_id = api.fidelity(calibration_dataset_id=calibration, calibration_samples=40)
    answer = api.get(f"/jobs/{job_id}/fidelity/layers")
    assert answer.status_code == 200, answer.text
    served = LayerProfileOut.model_validate(answer.json())
    stored = stored_profile(api.settings, job_id)
    assert not list(missing(stored, answer.json()))
    assert served.error is None and served.calibration_samples == 40
    x = digits["input"][: served.n_samples]
    names = [layer.name for layer in served.layers]
    cal = capture(bundle.golden_onnx, names, [halved[:40]])
    ev = capture(bundle.golden_onnx, names, [x])
    outside = 0
    for layer in served.layers:
        shift = layer.shift
        assert shift is not None
        low, high = cal[layer.name].min(), cal[layer.name].max()
        below, above = int((ev[layer.name] < low).sum()), int((ev[layer.name] > high).sum())
        assert (shift.calibration_min, shift.calibration_max) == (float(low), float(high)), layer.name
        assert (shift.calibration_below, shift.calibration_above) == (below, above), layer.name
        assert shift.calibration_outside_rate == pytest.approx(
            (below + above) / ev[layer.name].size, rel=1e-12
        )
        outside += below + above > 0
    assert outside >= 3
    kinds = [cause.kind for cause in served.likely_causes]
    assert "calibration_range" in kinds


def test_a_calibration_set_that_does_not_fit_leaves_a_note(api: Api, tmp_path: Path) -> None:
    np.savez(tmp_path / "flat.npz", input=np.zeros((20, 64), np.float32))
    flat = api.upload("datasets", tmp_path / "flat.npz")
    job_id = api.fidelity(calibration_dataset_id=flat)
    summary = api.get(f"/jobs/{job_id}/fidelity")
    assert summary.status_code == 200 and summary.json()["summary"]["n_samples"] > 0
    served = LayerProfileOut.model_validate(api.get(f"/jobs/{job_id}/fidelity/layers").json())
    assert served.error is None and served.calibration_samples is None and len(served.layers) >= 4
    assert all(layer.accumulated.sqnr_db is not None for layer in served.layers)
    assert all(layer.shift and layer.shift.calibration_outside_rate is None for layer in served.layers)
    note = next(note for note in served.notes if "calibration set could not be run" in note)
    assert "input" in note


def launch(api: Api, **params: Any) -> Any:
    base = {"golden_model_id": api.golden, "compressed_model_id": api.int8, "dataset_id": api.dataset}
    return api.http.post(
        "/api/v1/jobs",
        headers=api.headers,
        json={"project_id": api.project, "kind": "fidelity", "params": base | params},
    )


def test_the_calibration_set_must_be_the_projects(api: Api, tmp_path: Path) -> None:
    other = api.post("/projects", json={"name": "elsewhere"})["id"]
    np.savez(tmp_path / "elsewhere.npz", input=np.zeros((4, 1, 8, 8), np.float32))
    with (tmp_path / "elsewhere.npz").open("rb") as f:
        foreign = api.post(f"/projects/{other}/datasets", files={"file": ("elsewhere.npz", f)})["id"]
    answer = launch(api, calibration_dataset_id=foreign)
    assert answer.status_code == 404, answer.text
    assert foreign in answer.json()["detail"]
    answer = launch(api, calibration_dataset_id=str(uuid.uuid4()))
    assert answer.status_code == 404, answer.text


@pytest.mark.parametrize(
    "params",
    [
        {"calibration_dataset_id": "not-a-uuid"},
        {"calibration_dataset_id": 7},
        {"calibration_samples": 0},
    ],
)
def test_garbage_is_refused(api: Api, params: dict[str, Any]) -> None:
    answer = launch(api, **params)
    assert answer.status_code == 422, answer.text
    assert "params.calibration_" in answer.json()["detail"]


def test_a_calibration_set_needs_the_profile(api: Api) -> None:
    answer = launch(api, calibration_dataset_id=api.dataset, layer_profile=False)
    assert answer.status_code == 422, answer.text
    assert "layer_profile" in answer.json()["detail"]
