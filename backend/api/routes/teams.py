"""Teams, their members and roles, their audit trail; accounts (site admins)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, status

from backend.accounts import Caller, Role, create_team, create_user, normalized_username
from backend.api.account_schemas import (
    MemberAdd,
    MemberOut,
    MemberUpdate,
    TeamCreate,
    TeamOut,
    UserCreate,
    UserOut,
    role_name,
)
from backend.api.auth import CallerDep
from backend.api.deps import SessionDep, SettingsDep
from backend.api.errors import error_responses
from backend.api.routes import audit_trail
from backend.api.routes.lookup import require_role
from backend.audit import AuditAction, record
from backend.db.models import Team, TeamMembership, User
from backend.errors import Conflict, Forbidden, InvalidRequest, KneeboardError, NotFound
from backend.services import teams

router = APIRouter(tags=["teams"])


def _team(
    session: SessionDep, caller: Caller, team_id: uuid.UUID, need: Role = Role.viewer, action: str = ""
) -> Team:
    """The team, if the caller is in it (else 404, like a team that does not exist) with at least `need`."""
    team = session.get(Team, team_id)
    if team is None or caller.role_in(team_id) is None:
        raise NotFound(f"no team with id {team_id}; list yours with GET /api/v1/teams")
    require_role(session, caller, team_id, need, action)
    return team


def _membership(session: SessionDep, team_id: uuid.UUID, user_id: uuid.UUID) -> tuple[TeamMembership, User]:
    found = teams.member(session, team_id, user_id)
    if found is None:
        raise NotFound(f"user {user_id} is not a member of team {team_id}")
    return found


def _member_out(row: TeamMembership, user: User) -> MemberOut:
    return MemberOut(
        user_id=user.id, username=user.username, role=role_name(row.role), added_at=row.created_at
    )


def _keep_an_admin(session: SessionDep, team_id: uuid.UUID, leaving: uuid.UUID) -> None:
    if teams.admin_ids(session, team_id) == [leaving]:
        raise Conflict("a team needs at least one admin: make someone else admin first")


@router.get("/teams", operation_id="listTeams")
def list_teams(session: SessionDep, caller: CallerDep) -> list[TeamOut]:
    """Your teams, with your role in each."""
    return [
        TeamOut(id=t.id, name=t.name, role=role_name(caller.roles[t.id]), created_at=t.created_at)
        for t in teams.teams_by_name(session, caller.roles)
    ]


@router.post(
    "/teams",
    status_code=status.HTTP_201_CREATED,
    operation_id="createTeam",
    responses=error_responses(KneeboardError, Forbidden, Conflict, InvalidRequest),
)
def create_new_team(
    body: TeamCreate, session: SessionDep, settings: SettingsDep, caller: CallerDep
) -> TeamOut:
    """A new team, with you as its admin. Any signed-in account may create one unless the site restricts it
    to site admins (KNEEBOARD_TEAM_CREATION=site_admins: 403 for others)."""
    if settings.team_creation == "site_admins" and not caller.is_site_admin:
        raise Forbidden("only site admins create teams on this site; ask one to create the team and add you")
    team = create_team(session, body.name, caller.user_id)
    record(session, caller, team.id, AuditAction.team_created, "team", team.id, name=team.name)
    session.commit()
    return TeamOut(id=team.id, name=team.name, role=role_name(Role.admin), created_at=team.created_at)


@router.get("/teams/{team_id}", operation_id="getTeam", responses=error_responses(NotFound))
def get_team(team_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> TeamOut:
    team = _team(session, caller, team_id)
    return TeamOut(
        id=team.id, name=team.name, role=role_name(caller.roles[team.id]), created_at=team.created_at
    )


@router.get("/teams/{team_id}/members", operation_id="listTeamMembers", responses=error_responses(NotFound))
def list_members(team_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> list[MemberOut]:
    _team(session, caller, team_id)
    return sorted((_member_out(r, u) for r, u in teams.members(session, team_id)), key=lambda m: m.username)


@router.post(
    "/teams/{team_id}/members",
    status_code=status.HTTP_201_CREATED,
    operation_id="addTeamMember",
    responses=error_responses(KneeboardError, NotFound, Forbidden, Conflict, InvalidRequest),
)
def add_member(team_id: uuid.UUID, body: MemberAdd, session: SessionDep, caller: CallerDep) -> MemberOut:
    """Add an existing account to the team (team admins)."""
    _team(session, caller, team_id, Role.admin, "adding members")
    user = teams.user_named(session, normalized_username(body.username))
    if user is None:
        raise NotFound(f"no user named {body.username!r}; a site admin creates accounts (POST /api/v1/users)")
    if teams.member(session, team_id, user.id) is not None:
        raise Conflict(f"{user.username!r} is already in this team; change their role instead")
    row = TeamMembership(team_id=team_id, user_id=user.id, role=body.role)
    session.add(row)
    record(
        session,
        caller,
        team_id,
        AuditAction.member_added,
        "user",
        user.id,
        username=user.username,
        role=body.role,
    )
    session.commit()
    return _member_out(row, user)


@router.patch(
    "/teams/{team_id}/members/{user_id}",
    operation_id="updateTeamMember",
    responses=error_responses(KneeboardError, NotFound, Forbidden, Conflict, InvalidRequest),
)
def update_member(
    team_id: uuid.UUID, user_id: uuid.UUID, body: MemberUpdate, session: SessionDep, caller: CallerDep
) -> MemberOut:
    """Change a member's role (team admins); the last admin cannot step down."""
    _team(session, caller, team_id, Role.admin, "changing roles")
    row, user = _membership(session, team_id, user_id)
    if body.role != Role.admin.name:
        _keep_an_admin(session, team_id, user_id)
    before, row.role = row.role, body.role
    record(
        session, caller, team_id, AuditAction.member_role_changed, "user", user_id,
        username=user.username, before=before, after=body.role,
    )  # fmt: skip
    session.commit()
    return _member_out(row, user)


@router.delete(
    "/teams/{team_id}/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="removeTeamMember",
    responses=error_responses(NotFound, Forbidden, Conflict),
)
def remove_member(team_id: uuid.UUID, user_id: uuid.UUID, session: SessionDep, caller: CallerDep) -> None:
    """Remove a member (team admins), or leave the team yourself; the last admin cannot leave."""
    if user_id == caller.user_id:
        _team(session, caller, team_id)
    else:
        _team(session, caller, team_id, Role.admin, "removing members")
    row, user = _membership(session, team_id, user_id)
    _keep_an_admin(session, team_id, user_id)
    record(
        session, caller, team_id, AuditAction.member_removed, "user", user_id,
        username=user.username, role=role_name(row.role),
    )  # fmt: skip
    session.delete(row)
    session.commit()


def _site_admin(caller: Caller) -> None:
    if not caller.is_site_admin:
        raise Forbidden("only site admins manage accounts")


@router.get("/users", operation_id="listUsers", responses=error_responses(Forbidden))
def list_users(session: SessionDep, caller: CallerDep) -> list[UserOut]:
    """Every account (site admins)."""
    _site_admin(caller)
    return [UserOut.model_validate(u) for u in teams.all_users(session)]


@router.post(
    "/users",
    status_code=status.HTTP_201_CREATED,
    operation_id="createUser",
    responses=error_responses(KneeboardError, Forbidden, Conflict, InvalidRequest),
)
def create_account(body: UserCreate, session: SessionDep, caller: CallerDep) -> UserOut:
    """Create an account (site admins); a team admin then adds it to their team."""
    _site_admin(caller)
    user = create_user(session, body.username, body.password, site_admin=body.is_site_admin)
    session.commit()
    return UserOut.model_validate(user)


# The audit trail's routes live in their own module and are served with the team routes.
router.include_router(audit_trail.router)
