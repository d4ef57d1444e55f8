"""GET /api/v1/models/{id}/graph over the real app and Postgres, with the real inspect handler run in-process
on the demo's int8 QDQ CNN: 409 while inspecting, the stored graph afterwards (the same as the engine's, ids
the same as the model page's layers), and a clear 409 for a model inspected before graphs were stored. A model
the product makes (a recovery job's) is inspected like an upload (worker/jobs/made_models.py): its graph is
served, outlives the job that made it, and the 409 without one gives advice that fits the model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from backend.accounts import Role
from backend.api.app import create_app
from backend.contracts import RESULT_MODEL_GRAPH, JobKind
from backend.db.models import Artifact, JobResult, JobStatus, Model, ModelStatus
from backend.db.session import session_factory
from backend.services.jobs import new_job
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support.accounts import TestAccount, add_account
from tests.support.services import stack_settings
from worker.demo.models import write_demo_bundle
from worker.engine.inspection.graph import model_graph
from worker.jobs.inspect import InspectHandler
from worker.jobs.made_models import add_made_model, inspect_made_model
from worker.runtime import execute_job


@pytest.fixture(scope="module")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("graph_api"), "graph")


@pytest.fixture(scope="module")
def int8_onnx(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_bundle(tmp_path_factory.mktemp("graph_demo")).int8_onnx


@pytest.fixture
def http(settings: Settings, pg_url: str) -> Iterator[TestClient]:
    truncate_all(pg_url)
    with TestClient(create_app(settings, run_reaper=False)) as c:
        yield c
    truncate_all(pg_url)


def upload(http: TestClient, settings: Settings, path: Path) -> tuple[TestAccount, str, uuid.UUID]:
    with session_factory(settings.resolved_database_url)() as s:
        admin = add_account(s, None, None, Role.admin)
    project = http.post("/api/v1/projects", json={"name": "graphs"}, headers=admin.headers).json()
    with path.open("rb") as f:
        answer = http.post(
            f"/api/v1/projects/{project['id']}/models", headers=admin.headers, files={"file": (path.name, f)}
        )
    assert answer.status_code == 201, answer.text
    model_id = answer.json()["id"]
    with session_factory(settings.resolved_database_url)() as s:
        job_id = s.get_one(Model, uuid.UUID(model_id)).inspect_job_id
    assert job_id is not None
    return admin, model_id, job_id


def test_graph_is_stored_by_the_inspect_job_and_served(
    http: TestClient, settings: Settings, int8_onnx: Path
) -> None:
    admin, model_id, job_id = upload(http, settings, int8_onnx)
    url = f"/api/v1/models/{model_id}/graph"
    waiting = http.get(url, headers=admin.headers)
    assert waiting.status_code == 409 and "still being inspected" in waiting.json()["detail"]

    assert execute_job(str(job_id), InspectHandler(), settings) == "succeeded"
    answer = http.get(url, headers=admin.headers)
    assert answer.status_code == 200, answer.text
    graph = answer.json()
    engine = model_graph(int8_onnx, "onnx")
    assert [n["id"] for n in graph["nodes"]] == [n.id for n in engine.nodes]
    assert {(e["source"], e["target"]) for e in graph["edges"]} == {
        (e.source, e.target) for e in engine.edges
    }
    layers = http.get(f"/api/v1/models/{model_id}", headers=admin.headers).json()["inspection"]["layers"]
    owners = {n["id"]: n for n in graph["nodes"] if n["params"]}
    assert set(owners) == {layer["name"] for layer in layers}
    assert all(owners[layer["name"]]["macs"] == layer["macs"] for layer in layers)
    assert all(n["quantized"] for n in owners.values())

    with session_factory(settings.resolved_database_url)() as s:  # as for a model inspected before graphs
        s.execute(delete(JobResult).where(JobResult.job_id == job_id, JobResult.key == RESULT_MODEL_GRAPH))
        s.commit()
    old = http.get(url, headers=admin.headers)
    assert old.status_code == 409 and "before Kneeboard recorded graphs" in old.json()["detail"]
    assert http.get(f"/api/v1/models/{uuid.uuid4()}/graph", headers=admin.headers).status_code == 404

    assert "Delete the model and upload the file again" in old.json()["detail"]
    assert "relaunch" not in old.json()["detail"].lower()


def lineage(job_id: uuid.UUID, parent: str) -> dict[str, object]:
    """A recovered model's lineage as worker/jobs/recovery.py writes it (the fields ModelOut requires)."""
    return {
        "kind": "recovery",
        "job_id": str(job_id),
        "parent_model_id": parent,
        "dataset_id": str(uuid.uuid4()),
        "heldout_fraction": 0.3,
        "point_id": "w4-sym-channel",
    }


def test_a_made_model_is_inspected_like_an_upload(
    http: TestClient, settings: Settings, int8_onnx: Path
) -> None:
    """The recovery job's path (add_made_model after inspect_made_model, as worker/jobs/recovery.py calls them)
    on the demo's int8 CNN standing for a recovered model: ready, with an inspect job of its own holding the
    graph (the engine's, computed here directly), which deleting the recovery job keeps."""
    admin, upload_id, _ = upload(http, settings, int8_onnx)
    with session_factory(settings.resolved_database_url)() as s:
        golden = s.get_one(Model, uuid.UUID(upload_id))
        maker = new_job(golden.project_id, JobKind.recovery, {"golden_model_id": upload_id}, admin.user_id)
        maker.status = JobStatus.succeeded.value
        s.add(maker)
        s.flush()
        made = Model(
            id=uuid.uuid4(),
            project_id=golden.project_id,
            name="cnn · w4 · recovered",
            filename="model.onnx",
            format="onnx",
            artifact_sha256=golden.artifact_sha256,
            size_bytes=golden.size_bytes,
            status=ModelStatus.ready.value,
            lineage=lineage(maker.id, upload_id),
        )
        assert s.get(Artifact, golden.artifact_sha256) is not None
        inspector = add_made_model(s, made, inspect_made_model(int8_onnx, "onnx"), maker.id)
        s.commit()
        model_id, maker_id, inspector_id = made.id, maker.id, inspector.id
        assert (inspector.kind, inspector.status, inspector.created_by) == (
            "inspect",
            "succeeded",
            admin.user_id,
        )
        assert inspector.started_at is not None and inspector.finished_at is not None
        assert inspector.started_at <= inspector.finished_at and inspector.finished_at.tzinfo is not None

    url = f"/api/v1/models/{model_id}/graph"
    engine = model_graph(int8_onnx, "onnx")
    for _ in range(2):  # served; and still served once the recovery job that made it is deleted
        answer = http.get(url, headers=admin.headers)
        assert answer.status_code == 200, answer.text
        assert [n["id"] for n in answer.json()["nodes"]] == [n.id for n in engine.nodes]
        assert http.delete(f"/api/v1/jobs/{maker_id}", headers=admin.headers).status_code in (204, 404)
    shown = http.get(f"/api/v1/models/{model_id}", headers=admin.headers).json()
    assert shown["status"] == "ready" and len(shown["inspection"]["layers"]) == len(
        [n for n in engine.nodes if n.params]
    )

    # Its inspect job deleted too: the 409 says so, and a made model is made again, never "uploaded again".
    assert http.delete(f"/api/v1/jobs/{inspector_id}", headers=admin.headers).status_code == 204
    gone = http.get(url, headers=admin.headers)
    detail = gone.json()["detail"]
    assert gone.status_code == 409 and f"({inspector_id}) was deleted" in detail, detail
    assert f"recovery job {maker_id}, since deleted" in detail and "upload" not in detail, detail


def test_a_made_model_without_a_graph_is_told_to_relaunch_its_job(
    http: TestClient, settings: Settings, int8_onnx: Path
) -> None:
    """A model a recovery job made before made models were inspected (no inspect job): relaunch that job."""
    admin, upload_id, _ = upload(http, settings, int8_onnx)
    with session_factory(settings.resolved_database_url)() as s:
        golden = s.get_one(Model, uuid.UUID(upload_id))
        maker = new_job(golden.project_id, JobKind.recovery, {}, admin.user_id)
        s.add(maker)
        s.flush()
        made = Model(
            project_id=golden.project_id,
            name="old recovered",
            filename="model.onnx",
            format="onnx",
            artifact_sha256=golden.artifact_sha256,
            size_bytes=golden.size_bytes,
            status=ModelStatus.ready.value,
            inspection=golden.inspection,
            lineage=lineage(maker.id, upload_id),
        )
        s.add(made)
        s.commit()
        model_id, maker_id = made.id, maker.id
    answer = http.get(f"/api/v1/models/{model_id}/graph", headers=admin.headers)
    detail = answer.json()["detail"]
    assert answer.status_code == 409
    assert "stored before Kneeboard inspected models it makes" in detail, detail
    assert f"made by recovery job {maker_id}: relaunch that job" in detail and "upload" not in detail, detail
