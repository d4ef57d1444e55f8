"""Access control of every operation, generated from the app's route table so that a new endpoint cannot be
forgotten: an operation without a case in CASES fails `test_every_operation_has_an_access_case`.

For every operation:
- without credentials: 401 (except the public health and sign-in);
- a user of another team, using team A's ids: the same answer as for ids that do not exist (404, same
  message): ids cannot be probed; lists show none of A's rows;
- a viewer of team A: reads exactly what A's admin reads; every write is refused with 403 and changes
  nothing; a member cannot delete or cancel what someone else made;
- revoked and expired tokens stop working at once.

Runs the real app in-process over the real Postgres database (and Redis for the queued jobs).
"""

from __future__ import annotations

import json
import re
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from backend.accounts import Role
from backend.api.app import create_app
from backend.db.models import Alert, ApiToken, AuditEvent, Budget, Job, Project, SweepPoint
from backend.db.session import session_factory
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support import files
from tests.support.accounts import TestAccount, add_account
from tests.support.services import stack_settings


@dataclass
class World:
    """Team A's rows and the people who try to reach them."""

    admin: TestAccount  # A's admin, who made everything below
    member: TestAccount  # A's member
    viewer: TestAccount  # A's viewer
    outsider: TestAccount  # admin of team B
    ids: dict[str, str] = field(default_factory=dict)  # by path parameter (job ids by kind: job_id:sweep...)


@dataclass(frozen=True)
class Case:
    """How to call one operation with team A's ids, and who may.

    scope: "team" (a resource of team A: outsiders get 404), "list" (lists: outsiders see none of A's rows),
    "own" (the caller's own account: everyone may), "site" (site admins only), "public".
    """

    scope: str
    job_kind: str = "fidelity"  # which of A's jobs fills {job_id}
    query: Callable[[World], dict[str, Any]] = lambda w: {}
    body: Callable[[World], dict[str, Any]] | None = None
    files: Callable[[], dict[str, Any]] | None = None
    admin_only: bool = False  # team admins only (reads included)
    owner_or_admin: bool = False  # members may do it to what they made, admins to anything
    says_your_role: bool = False  # the answer includes the caller's own role


def _job_body(w: World) -> dict[str, Any]:
    params = {"golden_model_id": w.ids["model_id"], "compressed_model_id": w.ids["model_id"]}
    return {
        "project_id": w.ids["project_id"],
        "kind": "fidelity",
        "params": params | {"dataset_id": w.ids["dataset_id"]},
    }


def _recovery_body(w: World) -> dict[str, Any]:
    params = {"golden_model_id": w.ids["model_id"], "dataset_id": w.ids["dataset_id"]}
    methods = [{"name": "bias_correction"}]
    return {
        "project_id": w.ids["project_id"],
        "params": params | {"config": {"type": "weight_quant"}, "methods": methods},
    }


CASES: dict[str, Case] = {
    "health": Case("public"),
    "login": Case("public", body=lambda w: {"username": "nobody", "password": "nothing"}),
    "logout": Case("own"),
    "getMe": Case("own"),
    "changePassword": Case("own", body=lambda w: {"current_password": "x" * 10, "new_password": "y" * 12}),
    "listTokens": Case("own"),
    "createToken": Case("own", body=lambda w: {"name": "ci"}),
    "revokeToken": Case("own"),
    "listTeams": Case("list"),
    "createTeam": Case("own", body=lambda w: {"name": f"t-{uuid.uuid4().hex[:6]}"}),
    "getTeam": Case("team", says_your_role=True),
    "listTeamMembers": Case("team"),
    "addTeamMember": Case(
        "team", body=lambda w: {"username": w.outsider.username, "role": "viewer"}, admin_only=True
    ),
    "updateTeamMember": Case("team", body=lambda w: {"role": "viewer"}, admin_only=True),
    "removeTeamMember": Case("team", admin_only=True),
    "listAuditEvents": Case("team", admin_only=True),
    "exportAuditEventsCsv": Case("team", admin_only=True),
    "listUsers": Case("site"),
    "createUser": Case("site", body=lambda w: {"username": f"u-{uuid.uuid4().hex[:6]}"}),
    "createProject": Case(
        "team", body=lambda w: {"name": f"p-{uuid.uuid4().hex[:6]}", "team_id": w.ids["team_id"]}
    ),
    "listProjects": Case("list"),
    "getProject": Case("team"),
    "uploadModel": Case("team", files=lambda: {"file": ("m.onnx", files.minimal_onnx_bytes())}),
    "listModels": Case("team"),
    "getModel": Case("team"),
    "getModelGraph": Case("team"),
    "deleteModel": Case("team", owner_or_admin=True),
    "downloadModel": Case("team"),
    "updateModel": Case("team", body=lambda w: {"name": "renamed", "tags": ["a"]}, owner_or_admin=True),
    "uploadDataset": Case("team", files=lambda: {"file": ("d.npz", files.digits_like_npz(2))}),
    "listDatasets": Case("team"),
    "getDataset": Case("team"),
    "deleteDataset": Case("team", owner_or_admin=True),
    "updateDataset": Case("team", body=lambda w: {"notes": "n", "tags": ["a"]}, owner_or_admin=True),
    "listDatasetSamples": Case("team"),
    "getDatasetSampleThumbnail": Case("team"),
    "listJobKinds": Case("own"),
    "createJob": Case("team", body=_job_body),
    "listJobs": Case("list"),
    "getJob": Case("team"),
    "deleteJob": Case("team", owner_or_admin=True),
    "updateJob": Case("team", body=lambda w: {"name": "renamed", "tags": ["a"]}, owner_or_admin=True),
    "relaunchJob": Case("team"),
    "listJobChunks": Case("team"),
    "cancelJob": Case("team", owner_or_admin=True),
    "getFidelityReport": Case("team"),
    "getFidelityLayerProfile": Case("team"),
    "listFidelitySamples": Case("team"),
    "getSampleInspection": Case("team"),
    "getSampleInputPng": Case("team"),
    "getFidelityTrend": Case("team", query=lambda w: {"golden_model_id": w.ids["model_id"]}),
    "exportFidelitySamplesCsv": Case("team"),
    "getFidelityClasses": Case("team"),
    "getFidelitySequence": Case("team"),
    "getFidelityRobustness": Case("team"),
    "getRobustnessSamplePng": Case("team"),
    "getFidelityAttention": Case("team"),
    "listFidelityClassSamples": Case("team", query=lambda w: {"golden_class": 0, "compressed_class": 1}),
    "listFidelityRuns": Case("team"),
    "getSensitivityReport": Case("team", job_kind="sensitivity"),
    "getSensitivityAllBut": Case("team", job_kind="sensitivity"),
    "getMixedPrecisionPlans": Case("team", job_kind="sensitivity"),
    "getChannelImportance": Case("team", job_kind="sensitivity", query=lambda w: {"layer": "fc"}),
    "compareSensitivityProfiles": Case("team", query=lambda w: {"job_ids": [w.ids["job_id:sensitivity"]]}),
    "listSweepPoints": Case("team", job_kind="sweep"),
    "getSweepPoint": Case("team", job_kind="sweep"),
    "getSweepFrontier": Case(
        "team",
        query=lambda w: {"job_ids": [w.ids["job_id:sweep"]], "objective": ["kl_mean:min", "size_bytes:min"]},
    ),
    "exportSweepPoint": Case("team", job_kind="sweep"),
    "exportJobReport": Case("team"),
    "createRecoveryJob": Case("team", body=lambda w: _recovery_body(w)),
    "getRecoverySummary": Case("team", job_kind="recovery"),
    "getRecoveryLayers": Case("team", job_kind="recovery"),
    "downloadRecoveredModel": Case("team", job_kind="recovery"),
    "listBudgets": Case("team"),
    "createBudget": Case("team", body=lambda w: _budget_body()),
    "updateBudget": Case("team", body=lambda w: _budget_body()),
    "deleteBudget": Case("team"),
    "listAlerts": Case("team"),
    "acknowledgeAlert": Case("team"),
}


def _budget_body() -> dict[str, Any]:
    return {
        "name": f"b-{uuid.uuid4().hex[:6]}",
        "rules": [{"metric": "kl_mean", "bound": "max", "value": 0.1}],
    }


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    operation_id: str

    def __str__(self) -> str:
        return f"{self.method} {self.path} ({self.operation_id})"


def _operations() -> list[Operation]:
    with tempfile.TemporaryDirectory() as data_dir:
        spec = create_app(Settings(data_dir=Path(data_dir), seed_demo=False), run_reaper=False).openapi()
    return [
        Operation(method.upper(), path, op["operationId"])
        for path, methods in spec["paths"].items()
        for method, op in methods.items()
        if path.startswith("/api/v1/")
    ]


OPERATIONS = _operations()
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def test_every_operation_has_an_access_case() -> None:
    missing = [str(op) for op in OPERATIONS if op.operation_id not in CASES]
    assert not missing, "add a case to CASES for: " + ", ".join(missing)
    stale = set(CASES) - {op.operation_id for op in OPERATIONS}
    assert not stale, f"CASES names operations that do not exist: {stale}"


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
    job = http.post("/api/v1/jobs", json=_job_body(w), headers=h)
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
    w.ids |= {"index": "0", "token_id": token["id"], "slice": "gaussian_noise", "severity": "1"}
    return w


@pytest.fixture(scope="module")
def world(app_settings: Settings, http: TestClient) -> Iterator[World]:
    truncate_all(app_settings.resolved_database_url)
    yield _seed(app_settings, http)
    truncate_all(app_settings.resolved_database_url)


def _request(
    http: TestClient, op: Operation, w: World, headers: dict[str, str], replace: dict[str, str] | None = None
) -> Any:
    """Call the operation with A's ids (each id in `replace` swapped for its replacement)."""
    case = CASES[op.operation_id]
    ids = dict(w.ids)
    if "{job_id}" in op.path:
        ids["job_id"] = w.ids[f"job_id:{case.job_kind}"]
    swap = replace or {}
    path = re.sub(r"\{(\w+)\}", lambda m: swap.get(ids[m.group(1)], ids[m.group(1)]), op.path)
    query = json.loads(_swapped(json.dumps(case.query(w)), swap))
    kwargs: dict[str, Any] = {"params": query, "headers": headers}
    if case.body is not None:
        kwargs["json"] = json.loads(_swapped(json.dumps(case.body(w)), swap))
    if case.files is not None:
        kwargs["files"] = case.files()
    return http.request(op.method, path, **kwargs)


def _swapped(text: str, swap: dict[str, str]) -> str:
    for old, new in swap.items():
        text = text.replace(old, new)
    return text


def _team_a_ids(w: World) -> list[str]:
    return [v for k, v in w.ids.items() if k not in ("index", "user_id", "slice", "severity")]


def _anonymised(text: str, ids: list[str]) -> str:
    for value in ids:
        text = text.replace(value, "<id>")
    return text


OPS_BY_SCOPE = {
    scope: [op for op in OPERATIONS if CASES.get(op.operation_id, Case("?")).scope == scope]
    for scope in ("team", "list", "own", "site", "public")
}


@pytest.mark.parametrize(
    "op", [op for op in OPERATIONS if CASES.get(op.operation_id, Case("public")).scope != "public"], ids=str
)
def test_without_credentials_every_operation_is_401(http: TestClient, world: World, op: Operation) -> None:
    response = _request(http, op, world, headers={})
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer" and response.json()["error"] == "unauthenticated"
    bogus = _request(http, op, world, headers={"Authorization": "Bearer kb_not-a-token"})
    assert bogus.status_code == 401, bogus.text


@pytest.mark.parametrize("op", OPS_BY_SCOPE["team"], ids=str)
def test_another_team_gets_the_answer_of_an_id_that_does_not_exist(
    http: TestClient, world: World, op: Operation
) -> None:
    """404, word for word the answer for made-up ids: another team's ids cannot be told from unknown ones."""
    real = _request(http, op, world, world.outsider.headers)
    fakes = {value: str(uuid.uuid4()) for value in _team_a_ids(world)}
    made_up = _request(http, op, world, world.outsider.headers, replace=fakes)
    assert real.status_code == 404, f"{op}: {real.status_code} {real.text}"
    assert made_up.status_code == 404, f"{op}: {made_up.status_code} {made_up.text}"
    assert _anonymised(real.text, _team_a_ids(world)) == _anonymised(made_up.text, list(fakes.values()))


@pytest.mark.parametrize("op", OPS_BY_SCOPE["list"], ids=str)
def test_another_team_sees_none_of_its_rows_in_lists(http: TestClient, world: World, op: Operation) -> None:
    response = _request(http, op, world, world.outsider.headers)
    assert response.status_code == 200, response.text
    leaked = [i for i in _team_a_ids(world) if i in response.text]
    assert not leaked, f"{op} shows team A's {leaked}"
    # ...while team A's viewer sees them.
    seen = {"listProjects": "project_id", "listJobs": "job_id", "listTeams": "team_id"}[op.operation_id]
    assert world.ids[seen] in _request(http, op, world, world.viewer.headers).text


@pytest.mark.parametrize("op", [op for op in OPS_BY_SCOPE["team"] if op.method == "GET"], ids=str)
def test_a_viewer_reads_what_an_admin_reads(http: TestClient, world: World, op: Operation) -> None:
    as_viewer = _request(http, op, world, world.viewer.headers)
    if CASES[op.operation_id].admin_only:
        assert as_viewer.status_code == 403 and as_viewer.json()["error"] == "forbidden", as_viewer.text
        return
    as_admin = _request(http, op, world, world.admin.headers)
    assert as_admin.status_code not in (401, 403), as_admin.text
    if CASES[op.operation_id].says_your_role:
        assert (as_viewer.json().pop("role"), as_admin.json().pop("role")) == ("viewer", "admin")
        viewer_saw = {k: v for k, v in as_viewer.json().items() if k != "role"}
        assert viewer_saw == {k: v for k, v in as_admin.json().items() if k != "role"}
        return
    assert (as_viewer.status_code, as_viewer.content) == (as_admin.status_code, as_admin.content), op


def _row_counts(settings: Settings) -> dict[str, int]:
    from sqlalchemy import func

    from backend.db.models import Base

    with session_factory(settings.resolved_database_url)() as s:
        return {
            t.name: s.execute(select(func.count()).select_from(t)).scalar_one()
            for t in Base.metadata.sorted_tables
        }


@pytest.mark.parametrize("op", [op for op in OPS_BY_SCOPE["team"] if op.method in WRITES], ids=str)
def test_a_viewer_cannot_write(http: TestClient, world: World, app_settings: Settings, op: Operation) -> None:
    before = _row_counts(app_settings)
    response = _request(http, op, world, world.viewer.headers)
    assert response.status_code == 403, f"{op}: {response.status_code} {response.text}"
    assert response.json()["error"] == "forbidden" and "role" in response.json()["detail"]
    after = _row_counts(app_settings)
    assert after == before, f"{op} was refused but changed rows"


@pytest.mark.parametrize(
    "op", [op for op in OPS_BY_SCOPE["team"] if CASES[op.operation_id].owner_or_admin], ids=str
)
def test_a_member_cannot_delete_or_cancel_what_someone_else_made(
    http: TestClient, world: World, op: Operation
) -> None:
    response = _request(http, op, world, world.member.headers)
    assert response.status_code == 403, f"{op}: {response.status_code} {response.text}"
    assert "someone else's" in response.json()["detail"]


@pytest.mark.parametrize("op", OPS_BY_SCOPE["site"], ids=str)
def test_only_site_admins_manage_accounts(http: TestClient, world: World, op: Operation) -> None:
    response = _request(http, op, world, world.admin.headers)  # a team admin, not a site admin
    assert response.status_code == 403, response.text


def test_someone_elses_token_cannot_be_revoked(http: TestClient, world: World) -> None:
    response = http.delete(f"/api/v1/auth/tokens/{world.ids['token_id']}", headers=world.outsider.headers)
    assert response.status_code == 404
    assert http.get("/api/v1/auth/tokens", headers=world.admin.headers).json()[0]["revoked_at"] is None


# --- tokens, members and the audit trail, through the API -------------------------------------------------


def test_a_revoked_token_stops_working_at_once(http: TestClient, world: World) -> None:
    created = http.post(
        "/api/v1/auth/tokens", json={"name": "ci", "expires_in_days": 30}, headers=world.member.headers
    )
    assert created.status_code == 201
    token = created.json()
    assert token["token"].startswith("kb_") and token["prefix"] == token["token"][:9]
    headers = {"Authorization": f"Bearer {token['token']}"}
    me = http.get("/api/v1/auth/me", headers=headers).json()
    assert me["username"] == world.member.username and me["auth"] == "token"
    listed = http.get("/api/v1/auth/tokens", headers=headers).json()
    mine = next(t for t in listed if t["id"] == token["id"])
    assert "token" not in mine and mine["last_used_at"] is not None  # the secret is never shown again
    assert http.delete(f"/api/v1/auth/tokens/{token['id']}", headers=headers).status_code == 204
    refused = http.get("/api/v1/auth/me", headers=headers)
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]


def test_an_expired_token_stops_working(http: TestClient, world: World, app_settings: Settings) -> None:
    token = http.post("/api/v1/auth/tokens", json={"name": "short"}, headers=world.viewer.headers).json()
    headers = {"Authorization": f"Bearer {token['token']}"}
    assert http.get("/api/v1/auth/me", headers=headers).status_code == 200
    with session_factory(app_settings.resolved_database_url)() as s:
        s.execute(
            update(ApiToken)
            .where(ApiToken.id == uuid.UUID(token["id"]))
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )
        s.commit()
    assert http.get("/api/v1/auth/me", headers=headers).status_code == 401


def test_tokens_are_stored_only_as_hashes(world: World, app_settings: Settings) -> None:
    with session_factory(app_settings.resolved_database_url)() as s:
        stored = [json.dumps([str(c) for c in row]) for row in s.execute(select(ApiToken.__table__))]
    assert stored and not any(world.admin.token in row for row in stored)


def test_admins_manage_members_and_every_change_is_audited(
    http: TestClient, world: World, app_settings: Settings
) -> None:
    team = world.ids["team_id"]
    h = world.admin.headers
    with session_factory(app_settings.resolved_database_url)() as s:
        newcomer = add_account(s, None, f"elsewhere-{uuid.uuid4().hex[:4]}")
    added = http.post(
        f"/api/v1/teams/{team}/members", json={"username": newcomer.username, "role": "viewer"}, headers=h
    )
    assert added.status_code == 201, added.text
    # The newcomer now sees the project, as a viewer: reading yes, uploading no.
    assert world.ids["project_id"] in http.get("/api/v1/projects", headers=newcomer.headers).text
    upload = http.post(
        f"/api/v1/projects/{world.ids['project_id']}/models",
        headers=newcomer.headers,
        files={"file": ("m.onnx", files.minimal_onnx_bytes())},
    )
    assert upload.status_code == 403
    promoted = http.patch(
        f"/api/v1/teams/{team}/members/{newcomer.user_id}", json={"role": "member"}, headers=h
    )
    assert promoted.json()["role"] == "member"
    upload = http.post(
        f"/api/v1/projects/{world.ids['project_id']}/models",
        headers=newcomer.headers,
        files={"file": ("m.onnx", files.minimal_onnx_bytes(doc_string="the newcomer's own model"))},
    )
    assert upload.status_code == 201, upload.text
    # Their own upload they may delete; after they leave, the project is another team's to them: 404.
    assert http.delete(f"/api/v1/models/{upload.json()['id']}", headers=newcomer.headers).status_code == 204
    assert http.delete(f"/api/v1/teams/{team}/members/{newcomer.user_id}", headers=h).status_code == 204
    assert (
        http.get(f"/api/v1/projects/{world.ids['project_id']}", headers=newcomer.headers).status_code == 404
    )
    # The last admin cannot step down or leave.
    me = world.admin.user_id
    assert (
        http.patch(f"/api/v1/teams/{team}/members/{me}", json={"role": "member"}, headers=h).status_code
        == 409
    )
    assert http.delete(f"/api/v1/teams/{team}/members/{me}", headers=h).status_code == 409
    events = http.get(f"/api/v1/teams/{team}/audit", params={"limit": 500}, headers=h).json()
    actions = [(e["actor_name"], e["action"]) for e in reversed(events["items"])]
    for expected in [
        (world.admin.username, "project.created"),
        (world.admin.username, "model.uploaded"),
        (world.admin.username, "dataset.uploaded"),
        (world.admin.username, "job.launched"),
        (world.admin.username, "member.added"),
        (world.admin.username, "member.role_changed"),
        (newcomer.username, "model.uploaded"),
        (newcomer.username, "model.deleted"),
        (world.admin.username, "member.removed"),
    ]:
        assert expected in actions, f"{expected} not in {actions}"
    # Only this team's events, and none of the refused attempts.
    with session_factory(app_settings.resolved_database_url)() as s:
        teams = set(
            s.scalars(select(AuditEvent.team_id).where(AuditEvent.id.in_([e["id"] for e in events["items"]])))
        )
    assert teams == {uuid.UUID(team)}
    filtered = http.get(f"/api/v1/teams/{team}/audit", params={"action": "model.deleted"}, headers=h).json()
    assert filtered["total"] == 1 and filtered["items"][0]["detail"]["name"] == "m.onnx"


def test_a_project_goes_to_the_callers_only_team_or_must_name_one(
    http: TestClient, world: World, app_settings: Settings
) -> None:
    made = http.post(
        "/api/v1/projects", json={"name": f"auto-{uuid.uuid4().hex[:4]}"}, headers=world.member.headers
    )
    assert made.status_code == 201 and made.json()["team_id"] == world.ids["team_id"]
    second = http.post(
        "/api/v1/teams", json={"name": f"second-{uuid.uuid4().hex[:4]}"}, headers=world.member.headers
    )
    assert second.status_code == 201 and second.json()["role"] == "admin"
    ambiguous = http.post("/api/v1/projects", json={"name": "which"}, headers=world.member.headers)
    assert ambiguous.status_code == 422 and "team_id" in ambiguous.json()["detail"]
    # Same name in two teams is fine; the other team's project names are not revealed by a conflict.
    same = http.post(
        "/api/v1/projects",
        json={"name": "secret", "team_id": second.json()["id"]},
        headers=world.member.headers,
    )
    assert same.status_code == 201, same.text
    with session_factory(app_settings.resolved_database_url)() as s:
        assert len(s.scalars(select(Project).where(Project.name == "secret")).all()) == 2


def test_a_cross_site_request_cannot_use_a_dashboard_session(
    http: TestClient, world: World, app_settings: Settings
) -> None:
    with session_factory(app_settings.resolved_database_url)() as s:
        user = add_account(s, None, world.admin.team_name, Role.member, password="a long password")
    with TestClient(http.app) as browser:
        signed_in = browser.post(
            "/api/v1/auth/login", json={"username": user.username, "password": "a long password"}
        )
        assert signed_in.status_code == 200 and browser.cookies.get("kneeboard_session")
        body = {"name": f"csrf-{uuid.uuid4().hex[:4]}", "team_id": world.ids["team_id"]}
        evil = browser.post("/api/v1/projects", json=body, headers={"Origin": "https://evil.example"})
        assert evil.status_code == 403
        fine = browser.post("/api/v1/projects", json=body, headers={"Origin": "http://testserver"})
        assert fine.status_code == 201, fine.text
