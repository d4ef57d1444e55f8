#!/usr/bin/env bash
# One command for the whole test suite: install (and build the dashboard), make sure Postgres, Redis and
# Chromium are there, lint and type-check backend and frontend, check the migrations apply, then pytest
# (extra arguments go to pytest), browser tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh
./scripts/services.sh
if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing Debian's chromium for the browser tests"
  sudo_=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq chromium >/dev/null
fi

echo "== ruff"; .venv/bin/ruff check .
echo "== ruff format"; .venv/bin/ruff format --check .
echo "== mypy"; .venv/bin/mypy
echo "== frontend: API spec and generated client current, types, lint, unit tests"
(cd frontend && npm run --silent spec:check && npm run --silent check:client && npm run --silent typecheck \
  && npm run --silent lint && npm test --silent)

echo "== alembic upgrade head (Postgres)"
db="kneeboard_ci_$$"
psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $db" postgres
KNEEBOARD_DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:5432/$db" .venv/bin/alembic upgrade head
psql -h 127.0.0.1 -U postgres -qc "DROP DATABASE $db" postgres

echo "== pytest"
KNEEBOARD_REQUIRE_BROWSER=1 .venv/bin/pytest "$@"
