"""Teams are walled off: a user of another team, using team A's ids, gets word for word the answer
for ids that do not exist (ids cannot be probed), lists show none of A's rows, and a new project goes to
the caller's only team or must name one (without revealing other teams' project names).

Runs the real app in-process over the real Postgres database (and Redis for the queued jobs); the
operations and their cases come from tests/support/access_cases.py, team A's rows from conftest.py."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend.db.models import Project
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.access_cases import OPS_BY_SCOPE, Operation, World, anonymised, call_operation, team_a_ids


@pytest.mark.parametrize("op", OPS_BY_SCOPE["team"], ids=str)
def test_another_team_gets_the_answer_of_an_id_that_does_not_exist(
    http: TestClient, world: World, op: Operation
) -> None:
    """404, word for word the answer for made-up ids: another team's ids cannot be told from unknown ones."""
    real = call_operation(http, op, world, world.outsider.headers)
    fakes = {value: str(uuid.uuid4()) for value in team_a_ids(world)}
    made_up = call_operation(http, op, world, world.outsider.headers, replace=fakes)
    assert real.status_code == 404, f"{op}: {real.status_code} {real.text}"
    assert made_up.status_code == 404, f"{op}: {made_up.status_code} {made_up.text}"
    assert anonymised(real.text, team_a_ids(world)) == anonymised(made_up.text, list(fakes.values()))


@pytest.mark.parametrize("op", OPS_BY_SCOPE["list"], ids=str)
def test_another_team_sees_none_of_its_rows_in_lists(http: TestClient, world: World, op: Operation) -> None:
    response = call_operation(http, op, world, world.outsider.headers)
    assert response.status_code == 200, response.text
    leaked = [i for i in team_a_ids(world) if i in response.text]
    assert not leaked, f"{op} shows team A's {leaked}"
    # ...while team A's viewer sees them.
    seen = {"listProjects": "project_id", "listJobs": "job_id", "listTeams": "team_id"}[op.operation_id]
    assert world.ids[seen] in call_operation(http, op, world, world.viewer.headers).text


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
