#!/usr/bin/env bash
# One command for the whole test suite: install, make sure Postgres and Redis run, lint, type-check,
# check the migrations apply, then pytest (extra arguments go to pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh
./scripts/services.sh

echo "== ruff"; .venv/bin/ruff check .
echo "== ruff format"; .venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy

echo "== alembic upgrade head (Postgres)"
db="kneeboard_ci_$$"
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $db" postgres
KNEEBOARD_DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:5432/$db" .venv/bin/alembic upgrade head
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE $db" postgres

echo "== pytest"
.venv/bin/pytest "$@"
