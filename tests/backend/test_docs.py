"""The README and docker-compose.yml tell the truth about the settings."""

from __future__ import annotations

import re

import yaml

from backend.settings import Settings
from tests.support.services import REPO_ROOT

SETTINGS = {f"KNEEBOARD_{name.upper()}" for name in Settings.model_fields}


def test_readme_documents_every_setting() -> None:
    readme = (REPO_ROOT / "README.md").read_text()
    table = set(re.findall(r"^\| `(KNEEBOARD_[A-Z0-9_]+)` \|", readme, flags=re.M))
    assert table == SETTINGS


def test_docker_compose_uses_only_real_settings() -> None:
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    names = set(compose["x-kneeboard-env"])
    for service in compose["services"].values():
        env = service.get("environment") or {}
        names |= {k for k in env if k != "<<"}
    kneeboard = {n for n in names if n.startswith("KNEEBOARD_")}
    assert kneeboard and kneeboard <= SETTINGS, kneeboard - SETTINGS
    assert {"api", "worker", "db", "redis"} <= set(compose["services"])
