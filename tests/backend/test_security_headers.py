"""Security headers on the dashboard and API responses, and missing dashboard files answering 404."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from backend.api.app import FRONTEND_DIST, create_app
from backend.settings import Settings


def _policy(header: str) -> dict[str, list[str]]:
    directives = [d.split() for d in header.split(";") if d.strip()]
    return {d[0]: d[1:] for d in directives}


def _assert_hardened(response: object) -> dict[str, list[str]]:
    headers = response.headers  # type: ignore[attr-defined]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "same-origin"
    return _policy(headers["content-security-policy"])


@pytest.mark.parametrize(
    "path",
    ["/", "/api/v1/projects", "/api/v1/health", "/api/v1/no-such-route", "/openapi.json"],
)
def test_every_response_carries_a_policy_without_external_origins(client: TestClient, path: str) -> None:
    response = client.get(path)
    policy = _assert_hardened(response)
    assert policy["default-src"] == ["'self'"] and policy["script-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]
    assert policy["style-src"] == ["'self'", "'unsafe-inline'"]  # Plotly's inline style attributes
    assert not re.search(r"https?:|\*", response.headers["content-security-policy"])


@pytest.mark.parametrize("path", ["/docs", "/docs/oauth2-redirect"])
def test_the_api_docs_load_their_scripts_from_this_server(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    policy = _assert_hardened(response)
    assert policy["frame-ancestors"] == ["'none'"] and policy["default-src"] == ["'self'"]
    assert not re.search(r"https?:|\*", response.headers["content-security-policy"])
    # Every script, style sheet and image of the page is a path on this server, and each one answers.
    assets = re.findall(r'(?:src|href)=["\']([^"\']+)["\']', response.text) + re.findall(
        r"url: '([^']+)'", response.text
    )
    assert not [a for a in assets if "//" in a], assets
    for asset in re.findall(r'(?:src|href)="(/[^"]+)"', response.text):
        assert client.get(asset).status_code == 200, asset


def test_the_swagger_page_turns_off_the_online_validator(client: TestClient) -> None:
    page = client.get("/docs").text
    assert '"validatorUrl": null' in page
    assert client.get("/redoc").status_code == 404  # ReDoc's page links out to redocly.com: not served


def test_missing_dashboard_files_answer_404(settings: Settings, tmp_path: Path) -> None:
    with TestClient(create_app(settings, run_reaper=False, frontend_dist=tmp_path / "not-built")) as client:
        missing = client.get("/assets/index-0000.js")
        assert missing.status_code == 404 and missing.json()["error"] == "not_found"
        _assert_hardened(missing)
        page = client.get("/")
        assert page.status_code == 200 and "not built" in page.text


@pytest.mark.skipif(not (FRONTEND_DIST / "assets").is_dir(), reason="the dashboard is not built")
def test_an_unknown_asset_of_a_built_dashboard_answers_404(client: TestClient) -> None:
    assert client.get("/assets/no-such-bundle.js").status_code == 404
    bundle = next((FRONTEND_DIST / "assets").glob("*.js"))
    served = client.get(f"/assets/{bundle.name}")
    assert served.status_code == 200
    _assert_hardened(served)
