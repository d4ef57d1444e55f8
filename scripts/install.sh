#!/usr/bin/env bash
# Create .venv and install Kneeboard with its worker and dev dependencies, pinned by requirements/constraints.txt.
# Then build the dashboard (frontend/) with npm. Idempotent: each step is skipped when its inputs are unchanged
# since it last ran.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "Kneeboard needs Python 3.11 or newer (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv

stamp=$(cat pyproject.toml requirements/constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.kneeboard-installed 2>/dev/null)" != "$stamp" ]; then
  echo "Installing Kneeboard into .venv (first time: a few minutes)..."
  .venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "is ignored" || true
  # torch==2.13.0 is the CPU build; the constraints file pins everything else to the versions CI tests.
  .venv/bin/python -m pip install --quiet -c requirements/constraints.txt -e '.[worker,dev]' 2>&1 | grep -v "is ignored" || true
  .venv/bin/python -c 'import backend, worker, torch, onnxruntime' # fail here, not later, if the install did not work
  echo "$stamp" > .venv/.kneeboard-installed
fi

# The dashboard, built by Vite into frontend/dist (served by the API at /). Needs Node >= 20.19 and npm.
if command -v npm >/dev/null 2>&1; then
  frontend_stamp=$(cd frontend && cat package.json package-lock.json index.html offline.html vite.config.ts tsconfig.json $(find src -type f | sort) | sha256sum | cut -d' ' -f1)
  if [ "$(cat frontend/dist/.kneeboard-built 2>/dev/null)" != "$frontend_stamp" ]; then
    echo "Building the dashboard (frontend/)..."
    (cd frontend && npm ci --no-audit --no-fund --loglevel=error && npm run build --silent)
    echo "$frontend_stamp" > frontend/dist/.kneeboard-built
  fi
else
  echo "npm not found: the API and worker will run, but the dashboard is not built (install Node 20 and rerun)." >&2
fi
