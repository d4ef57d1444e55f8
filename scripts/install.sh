#!/usr/bin/env bash
# Create .venv and install Kneeboard with its worker and dev dependencies, pinned by requirements/constraints.txt.
# Idempotent: does nothing when pyproject.toml and the constraints are unchanged since the last install.
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
