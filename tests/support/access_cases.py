"""How to call every operation of the API with team A's ids, and who may: the access cases of
tests/backend/access/, one per operation of the app's route table (an operation without a case fails
`test_every_operation_has_an_access_case`), and the helpers that send them and compare their answers."""

from __future__ import annotations

import json
import re
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from backend.api.app import create_app
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support import files
from tests.support.accounts import TestAccount


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


def job_body(w: World) -> dict[str, Any]:
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
    "createJob": Case("team", body=job_body),
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
    "getFidelityTaskProxy": Case("team"),
    "getSampleTaskPredictions": Case("team"),
    "getSampleTaskAudio": Case("team"),
    "listFidelityTaskSamples": Case("team", query=lambda w: {"metric": "iou_vs_golden"}),
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
    "getSweepSearch": Case("team", job_kind="sweep"),
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


def call_operation(
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


def team_a_ids(w: World) -> list[str]:
    return [v for k, v in w.ids.items() if k not in ("index", "user_id", "slice", "severity", "which")]


def anonymised(text: str, ids: list[str]) -> str:
    for value in ids:
        text = text.replace(value, "<id>")
    return text


OPS_BY_SCOPE = {
    scope: [op for op in OPERATIONS if CASES.get(op.operation_id, Case("?")).scope == scope]
    for scope in ("team", "list", "own", "site", "public")
}


def row_counts(settings: Settings) -> dict[str, int]:
    from sqlalchemy import func

    from backend.db.models import Base

    with session_factory(settings.resolved_database_url)() as s:
        return {
            t.name: s.execute(select(func.count()).select_from(t)).scalar_one()
            for t in Base.metadata.sorted_tables
        }
