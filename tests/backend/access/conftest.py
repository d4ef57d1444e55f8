"""Team A's rows (a project, a model, a dataset, a job of every kind, a sweep point, a budget and its
alert, a token) and the people who try to reach them: admin, member and viewer of team A, admin of team B;
seeded afresh for each access module over the real Postgres database."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from backend.accounts import Role
from backend.api.app import create_app
from backend.db.models import Alert, Budget, Job, SweepPoint
from backend.db.session import session_factory
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support import files
from tests.support.access_cases import World, job_body
from tests.support.accounts import add_account
from tests.support.services import stack_settings


@pytest.fixture(scope="module")
def app_settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("access"), "access")


@pytest.fixture(scope="module")
def http(app_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(app_settings, run_reaper=False)) as c:
        yield c


def _seed(settings: Settings, http: TestClient) -> World:
    url = settings.resolved_database_url
    with session_factory(url)() as s:
        admin = add_account(s, f"alice-{uuid.uuid4().hex[:4]}", f"team-a-{uuid.uuid4().hex[:4]}", Role.admin)
        member = add_account(s, None, admin.team_name, Role.member)
        viewer = add_account(s, None, admin.team_name, Role.viewer)
        outsider = add_account(s, None, None, Role.admin)
    w = World(admin, member, viewer, outsider)
    h = admin.headers
    project = http.post("/api/v1/projects", json={"name": "secret"}, headers=h).json()
    w.ids |= {"team_id": str(admin.team_id), "project_id": project["id"], "user_id": str(member.user_id)}
    upload = http.post(
        f"/api/v1/projects/{project['id']}/models",
        headers=h,
        files={"file": ("g.onnx", files.minimal_onnx_bytes())},
    )
    w.ids["model_id"] = upload.json()["id"]
    data = http.post(
        f"/api/v1/projects/{project['id']}/datasets",
        headers=h,
        files={"file": ("d.npz", files.digits_like_npz(4))},
    )
    w.ids["dataset_id"] = data.json()["id"]
    job = http.post("/api/v1/jobs", json=job_body(w), headers=h)
    assert job.status_code == 201, job.text
    w.ids["job_id"] = w.ids["job_id:fidelity"] = job.json()["id"]
    with session_factory(url)() as s:
        for kind in ("sensitivity", "sweep", "recovery"):
            row = Job(
                project_id=uuid.UUID(project["id"]),
                kind=kind,
                params={},
                status="succeeded",
                attempts=1,
                created_by=admin.user_id,
            )
            s.add(row)
            s.flush()
            w.ids[f"job_id:{kind}"] = str(row.id)
        s.add(
            SweepPoint(
                job_id=uuid.UUID(w.ids["job_id:sweep"]),
                index=0,
                label="fp32",
                config={},
                objectives={"kl_mean": 0.0, "size_bytes": 10.0},
                point={},
            )
        )
        budget = Budget(project_id=uuid.UUID(project["id"]), name="release", scope="all", rules=[])
        s.add(budget)
        s.flush()
        alert = Alert(
            project_id=budget.project_id,
            budget_id=budget.id,
            budget_name=budget.name,
            job_id=uuid.UUID(w.ids["job_id:fidelity"]),
            breaches=[],
        )
        s.add(alert)
        s.flush()
        w.ids |= {"budget_id": str(budget.id), "alert_id": str(alert.id)}
        s.commit()
    token = http.post("/api/v1/auth/tokens", json={"name": "a's"}, headers=h).json()
    w.ids |= {
        "index": "0",
        "token_id": token["id"],
        "slice": "gaussian_noise",
        "severity": "1",
        "which": "golden",
    }
    return w


@pytest.fixture(scope="module")
def world(app_settings: Settings, http: TestClient) -> Iterator[World]:
    truncate_all(app_settings.resolved_database_url)
    yield _seed(app_settings, http)
    truncate_all(app_settings.resolved_database_url)
