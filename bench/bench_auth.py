"""What signing in costs: a request with an API token against the same request's work without one, and a
dashboard sign-in (one Argon2id hash) against both. In-process app over embedded SQLite.

    .venv/bin/python -m bench.bench_auth
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import best_of, report

REQUESTS = 200


def main() -> None:
    from fastapi.testclient import TestClient

    from backend.accounts import authenticate
    from backend.api.app import create_app
    from backend.db.migrations import upgrade_to_head
    from backend.db.session import session_factory
    from backend.settings import Settings
    from tests.support.accounts import account_in

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", seed_demo=False)
        settings.data_dir.mkdir()
        upgrade_to_head(settings.resolved_database_url)
        account = account_in(
            settings.resolved_database_url, username="bench", team="bench", password="a long password"
        )
        sessions = session_factory(settings.resolved_database_url)
        with TestClient(create_app(settings, run_reaper=False)) as client:

            def public_requests() -> None:
                for _ in range(REQUESTS):
                    assert client.get("/api/v1/health").status_code == 200

            def token_requests() -> None:
                for _ in range(REQUESTS):
                    assert client.get("/api/v1/teams", headers=account.headers).status_code == 200

            def token_lookups() -> None:
                with sessions() as session:
                    for _ in range(REQUESTS):
                        assert authenticate(session, account.token) is not None

            def sign_in() -> None:
                body = {"username": "bench", "password": "a long password"}
                assert client.post("/api/v1/auth/login", json=body).status_code == 200

            base = best_of(public_requests, repeats=3)
            print(f"auth: {REQUESTS} requests in-process, embedded SQLite")
            report(f"{REQUESTS} x GET /health (no sign-in, 1 query)", base, "baseline", base)
            report(
                f"{REQUESTS} x GET /teams with an API token",
                best_of(token_requests, repeats=3),
                "baseline",
                base,
            )
            report(
                f"{REQUESTS} x token lookup alone (sha256 + 2 queries)",
                best_of(token_lookups, repeats=3),
                "baseline",
                base,
            )
            one = base / REQUESTS
            report(
                "1 x POST /auth/login (one Argon2id hash)", best_of(sign_in, repeats=3), "of one /health", one
            )


if __name__ == "__main__":
    main()
