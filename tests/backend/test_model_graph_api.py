"""GET /api/v1/models/{id}/graph over the real app and Postgres, with the real inspect handler run in-process
on the demo's int8 QDQ CNN: 409 while inspecting, the stored graph afterwards (the same as the engine's, ids
the same as the model page's layers), and a clear 409 for a model inspected before graphs were stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete

from backend.accounts import Role
from backend.api.app import create_app
from backend.contracts import RESULT_MODEL_GRAPH
from backend.db.models import JobResult, Model
from backend.db.session import session_factory
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support.accounts import TestAccount, add_account
from tests.support.services import stack_settings
from worker.demo.models import write_demo_bundle
from worker.engine.inspection.graph import model_graph
from worker.jobs.inspect import InspectHandler
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
