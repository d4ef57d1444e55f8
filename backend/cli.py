"""`kneeboard` command line: up (the whole embedded stack), api, worker, migrate, user, token, check."""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import select

from backend import accounts
from backend.contracts import DEVICE_NAME_PATTERN, device_queue
from backend.db.migrations import upgrade_to_head
from backend.db.models import Team, TeamMembership, User
from backend.db.session import session_factory
from backend.errors import KneeboardError
from backend.settings import Settings, get_settings
from backend.supervisor import ChildSpec, Supervisor
from kneeboard_client.cli import add_check_arguments, check_from_args

log = logging.getLogger("kneeboard")


def worker_command(
    settings: Settings,
    concurrency: int | None = None,
    hostname: str = "kneeboard@%h",
    device: str | None = None,
) -> list[str]:
    """The Celery worker command line for these settings; with `device`, a worker that consumes only that
    device's queue (chunks routed to it, e.g. a sweep's points to be timed on target hardware)."""
    queue = settings.queue_name if device is None else device_queue(settings.queue_name, device)
    cmd = [
        sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker",
        "--loglevel=INFO",
        f"--concurrency={concurrency or settings.worker_concurrency}",
        f"--queues={queue}",
        f"--hostname={hostname}",
        "--without-mingle", "--without-gossip",
    ]  # fmt: skip
    if settings.uses_filesystem_broker:
        cmd.append("--without-heartbeat")
    return cmd


KEEP_ALIVE_S = 75
"""How long the API keeps an idle HTTP connection open. Longer than the idle expiry of the clients and proxies
in front of it (httpx 5 s, nginx and cloud load balancers 60 s): at uvicorn's default of 5 s, a client that
reused a connection just as the server closed it got a reset (bench_load: 1-4 ReadErrors per 30 s run)."""


def _serve(settings: Settings) -> None:
    """Serve the API with KNEEBOARD_API_PROCESSES uvicorn worker processes (one over SQLite).

    Several processes need the app as an import string: each worker process builds its own app (its own
    database pool and reaper loop) from the same KNEEBOARD_* environment. uvicorn's supervisor restarts a
    worker process that dies.
    """
    import uvicorn

    processes = settings.resolved_api_processes
    if processes == 1:
        from backend.api.served_app import served_app

        uvicorn.run(
            served_app(settings),
            host=settings.host,
            port=settings.port,
            log_level="info",
            timeout_keep_alive=KEEP_ALIVE_S,
        )
        return
    log.info("serving the API with %d processes", processes)
    uvicorn.run(
        "backend.api.served_app:served_app",
        factory=True,
        workers=processes,
        host=settings.host,
        port=settings.port,
        log_level="info",
        timeout_keep_alive=KEEP_ALIVE_S,
    )


def cmd_migrate(settings: Settings) -> None:
    migrate_quietly(settings)
    print(f"database at head: {settings.resolved_database_url}")


def ensure_first_admin(settings: Settings) -> None:
    """On an instance with no accounts, create the site admin and say how to sign in."""
    with session_factory(settings.resolved_database_url)() as session:
        admin = accounts.ensure_first_admin(
            session, settings.first_admin, settings.first_admin_password or None, settings.first_team
        )
    url = f"http://{settings.host}:{settings.port}"
    password_file = settings.first_admin_password_file
    if admin.password is not None:
        if not settings.first_admin_password:
            password_file.write_text(admin.password + "\n")
            password_file.chmod(0o600)
        shown = "(KNEEBOARD_FIRST_ADMIN_PASSWORD)" if settings.first_admin_password else admin.password
        print(
            f"Kneeboard: created the first account. Sign in at {url} as {admin.username!r} with password "
            f"{shown}, then change it on the account page.",
            flush=True,
        )
    elif password_file.exists():
        print(
            f"Kneeboard: sign in as {settings.first_admin!r}; the first password is in {password_file}",
            flush=True,
        )


def _seeder_token(settings: Settings) -> str:
    """A short-lived API token for the demo seeder (a bearer: sign-ins work only as the cookie), as the
    first admin (who owns the demo project)."""
    with session_factory(settings.resolved_database_url)() as session:
        user = session.scalar(select(User).where(User.username == settings.first_admin))
        if user is None:
            raise SystemExit(f"no account named {settings.first_admin!r} to seed the demo project with")
        _, secret = accounts.issue_token(
            session, user.id, accounts.TokenKind.api, "demo seeder", timedelta(hours=1)
        )
        session.commit()
    return secret


def cmd_up(settings: Settings) -> None:
    """Migrate, create the first admin, start one worker process and the demo seeder, then serve the API
    and dashboard."""
    cmd_migrate(settings)
    ensure_first_admin(settings)
    # Supervised (backend/supervisor.py): a child that dies is restarted with the reason logged, one that
    # keeps dying is given up on, and the finished seeder is reaped at once; each runs in its own process
    # group, so that stopping `up` stops a child and everything it started (Celery's pool processes).
    children = [ChildSpec("worker", worker_command(settings))]
    if settings.seed_demo:
        api_url = f"http://{settings.host}:{settings.port}"
        seeder = [sys.executable, "-m", "worker.demo.seed", "--api", api_url]
        env = os.environ | {"KNEEBOARD_API_TOKEN": _seeder_token(settings)}
        children.append(ChildSpec("demo seeder", seeder, env=env, restart_on_success=False))
    supervisor = Supervisor(children)
    supervisor.start()
    print(f"Kneeboard: dashboard at http://{settings.host}:{settings.port}  (API docs at /docs)", flush=True)
    # uvicorn shuts down on SIGTERM, then raises the signal again for the previous handler: make that
    # handler an exit, so that the children are stopped below instead of the process dying outright.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        _serve(settings)
    finally:
        supervisor.stop()


def _device_name(value: str) -> str:
    if not re.fullmatch(DEVICE_NAME_PATTERN, value):
        raise argparse.ArgumentTypeError(f"{value!r}: lower-case letters, digits, - and _ (e.g. rpi5)")
    return value


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="kneeboard", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="migrate, start a worker and the API + dashboard, seed the demo project")
    sub.add_parser(
        "api", help="serve the API and dashboard only (run `migrate` first); creates the first admin if none"
    )
    worker = sub.add_parser("worker", help="run a Celery worker for these settings")
    worker.add_argument(
        "--device",
        type=_device_name,
        help='serve only this device\'s queue (e.g. rpi5): sweeps with "device": "rpi5" run their points here',
    )
    sub.add_parser("migrate", help="upgrade the database to the latest Alembic revision")
    user = sub.add_parser("user", help="manage accounts").add_subparsers(dest="action", required=True)
    create = user.add_parser("create", help="create an account (the password is read from stdin, if given)")
    create.add_argument("username")
    create.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    create.add_argument("--site-admin", action="store_true", help="may create accounts")
    create.add_argument("--team", help="add to this team (created if missing, with this user as admin)")
    create.add_argument("--role", choices=[r.name for r in accounts.Role], default="member")
    token = sub.add_parser("token", help="personal API tokens").add_subparsers(dest="action", required=True)
    token_create = token.add_parser("create", help="print a new API token of a user (for scripts and CI)")
    token_create.add_argument("--user", required=True)
    token_create.add_argument("--name", default="command line")
    token_create.add_argument("--expires-in-days", type=int)
    check = sub.add_parser("check", help="run a fidelity job on a server and gate CI on it (exit 0/1/2)")
    add_check_arguments(check)
    args = parser.parse_args(argv)
    if args.command == "check":  # a client of a server: no settings, no database
        sys.exit(check_from_args(args))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = get_settings()
    if args.command == "up":
        cmd_up(settings)
    elif args.command == "api":
        ensure_first_admin(settings)
        _serve(settings)
    elif args.command == "worker":
        hostname = "kneeboard@%h" if args.device is None else f"kneeboard-{args.device}@%h"
        os.execv(sys.executable, worker_command(settings, hostname=hostname, device=args.device))
    elif args.command == "migrate":
        cmd_migrate(settings)
    elif args.command == "user":
        password = sys.stdin.readline().rstrip("\n") if args.password_stdin else None
        cmd_user_create(settings, args.username, password, args.site_admin, args.team, args.role)
    elif args.command == "token":
        print(cmd_token_create(settings, args.user, args.name, args.expires_in_days))


def cmd_user_create(
    settings: Settings, username: str, password: str | None, site_admin: bool, team: str | None, role: str
) -> None:
    migrate_quietly(settings)
    with session_factory(settings.resolved_database_url)() as session:
        try:
            user = accounts.create_user(session, username, password, site_admin=site_admin)
            session.flush()
            if team:
                existing = session.scalar(select(Team).where(Team.name == team))
                if existing is None:
                    accounts.create_team(session, team, user)
                else:
                    session.add(TeamMembership(team_id=existing.id, user_id=user.id, role=role))
            session.commit()
        except KneeboardError as exc:
            raise SystemExit(f"kneeboard user create: {exc.message}") from exc
    print(f"created user {user.username!r}" + (f" in team {team!r}" if team else ""))


def cmd_token_create(settings: Settings, username: str, name: str, expires_in_days: int | None) -> str:
    if expires_in_days is not None and not 1 <= expires_in_days <= 3650:  # 0 used to mean "never expires"
        raise SystemExit(
            f"kneeboard token create: --expires-in-days must be from 1 to 3650 (got {expires_in_days}); "
            "leave it out for a token that works until it is revoked"
        )
    migrate_quietly(settings)
    with session_factory(settings.resolved_database_url)() as session:
        user = session.scalar(select(User).where(User.username == username.strip().lower()))
        if user is None:
            raise SystemExit(f"kneeboard token create: no user named {username!r}")
        lifetime = None if expires_in_days is None else timedelta(days=expires_in_days)
        _, secret = accounts.issue_token(session, user.id, accounts.TokenKind.api, name, lifetime)
        session.commit()
    return secret


def migrate_quietly(settings: Settings) -> None:
    """Upgrade the database to head; `user` and `token` print only their result (a token for $(...))."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade_to_head(settings.resolved_database_url)


if __name__ == "__main__":
    main()
