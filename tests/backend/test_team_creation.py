"""Who may create a team (README, "Accounts, teams and access"): by default any signed-in account, which
becomes admin of the new team and of nothing else; with KNEEBOARD_TEAM_CREATION=site_admins, site admins only."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend.accounts import Role
from backend.api.app import create_app
from backend.db.models import AuditEvent, TeamMembership, User
from backend.db.session import session_factory
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support.accounts import TestAccount, account_in


@pytest.fixture
def viewer(settings: Settings) -> Iterator[TestAccount]:
    """A viewer of a team that already holds a project."""
    url = settings.resolved_database_url
    truncate_all(url)
    admin = account_in(url, team="first", role=Role.admin)
    with TestClient(create_app(settings, run_reaper=False)) as client:
        made = client.post("/api/v1/projects", json={"name": "first's project"}, headers=admin.headers)
        assert made.status_code == 201, made.text
    yield account_in(url, team="first", role=Role.viewer)
    truncate_all(url)


def _new_team(client: TestClient, who: TestAccount) -> dict[str, object]:
    response = client.post("/api/v1/teams", json={"name": f"own-{uuid.uuid4().hex[:6]}"}, headers=who.headers)
    return {"status": response.status_code, **response.json()}


def test_by_default_a_viewer_creates_a_team_and_is_admin_of_it_only(
    settings: Settings, viewer: TestAccount
) -> None:
    assert settings.team_creation == "everyone"
    with TestClient(create_app(settings, run_reaper=False)) as client:
        team = _new_team(client, viewer)
        assert team["status"] == 201 and team["role"] == "admin"
        roles = {t["name"]: t["role"] for t in client.get("/api/v1/teams", headers=viewer.headers).json()}
        assert roles == {"first": "viewer", team["name"]: "admin"}
        # Still a viewer in the first team: creating a project there needs the member role.
        there = client.post(
            "/api/v1/projects",
            json={"name": "sneaky", "team_id": str(viewer.team_id)},
            headers=viewer.headers,
        )
        assert there.status_code == 403, there.text
        # In the new team: a member's rights and more (a project), and nothing of the first team to see.
        own = client.post(
            "/api/v1/projects", json={"name": "mine", "team_id": team["id"]}, headers=viewer.headers
        )
        assert own.status_code == 201, own.text
        projects = client.get("/api/v1/projects", headers=viewer.headers).json()
        by_team = {(p["team_id"], p["name"]) for p in projects}
        assert by_team == {(str(viewer.team_id), "first's project"), (team["id"], "mine")}
    with session_factory(settings.resolved_database_url)() as s:
        memberships = {
            (str(m.team_id), m.role)
            for m in s.scalars(select(TeamMembership).where(TeamMembership.user_id == viewer.user_id))
        }
        assert memberships == {(str(viewer.team_id), "viewer"), (team["id"], "admin")}
        created = s.scalars(select(AuditEvent).where(AuditEvent.action == "team.created")).all()
        assert [(str(e.team_id), e.actor_id) for e in created] == [(team["id"], viewer.user_id)]


def test_site_admins_only_when_the_site_says_so(settings: Settings, viewer: TestAccount) -> None:
    restricted = settings.model_copy(update={"team_creation": "site_admins"})
    url = settings.resolved_database_url
    site_admin = account_in(url, team="admins", role=Role.admin)
    with session_factory(url)() as s:
        s.get_one(User, site_admin.user_id).is_site_admin = True
        s.commit()
    with TestClient(create_app(restricted, run_reaper=False)) as client:
        refused = _new_team(client, viewer)
        assert refused["status"] == 403 and "site admins" in str(refused["detail"])
        # A team admin is not a site admin either.
        first_admin = account_in(url, team="first", role=Role.admin)
        assert _new_team(client, first_admin)["status"] == 403
        made = _new_team(client, site_admin)
        assert made["status"] == 201 and made["role"] == "admin"
        names = {t["name"] for t in client.get("/api/v1/teams", headers=viewer.headers).json()}
        assert names == {"first"}


def test_the_setting_takes_only_the_two_rules() -> None:
    with pytest.raises(ValueError, match="team_creation"):
        Settings(team_creation="members")  # type: ignore[arg-type]
