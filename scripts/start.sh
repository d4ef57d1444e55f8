#!/usr/bin/env bash
# One command: install, then start the API, a Celery worker and the dashboard on http://127.0.0.1:8000
# (SQLite + a filesystem broker under .kneeboard/, no Postgres or Redis needed), seeding a demo project.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh
exec .venv/bin/kneeboard up
