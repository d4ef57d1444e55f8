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

export KNEEBOARD_REQUIRE_BROWSER=1
for arg in "$@"; do
  if [[ "$arg" != -* ]]; then  # tests named on the command line: run just those, in one process
    echo "== pytest"; exec .venv/bin/pytest "$@"
  fi
done
# The whole suite in two processes at once: the end-to-end and browser tests spend most of their time
# waiting on the workers, servers and browser they start, so the unit and API tests run beside them. Then,
# alone: the tests that stop and restart Postgres and Redis (no other test may lose its database meanwhile)
# and the login flood, which measures a signed-in user's latency against an idle machine.
echo "== pytest: end-to-end and browser tests beside the rest, then the service blips and the flood alone"
logs=$(mktemp -d)
ALONE=(tests/e2e/test_service_blips.py tests/backend/test_login_throttle.py)
.venv/bin/pytest "$@" -p no:cacheprovider --basetemp="$logs/e2e" tests/e2e tests/browser \
  --ignore="${ALONE[0]}" >"$logs/e2e.log" 2>&1 &
e2e=$!
status=0
.venv/bin/pytest "$@" --basetemp="$logs/rest" tests --ignore=tests/e2e --ignore=tests/browser \
  --ignore="${ALONE[1]}" || status=$?
wait "$e2e" || status=$?
echo "== pytest (end-to-end and browser, run beside the above)"; cat "$logs/e2e.log"
echo "== pytest (alone)"; .venv/bin/pytest "$@" -p no:cacheprovider "${ALONE[@]}" || status=$?
rm -rf "$logs"
exit "$status"
