"""A hostile request body costs nothing (issue 32): a body other than an upload is refused (413) past
KNEEBOARD_MAX_BODY_BYTES before it is read, with or without a Content-Length, and a call with no credential
to a signed-in route is refused (401) without its body being read at all. Uploads keep their own limit.

The app is driven at the ASGI level where it matters how much of the body it asked for: `receive` hands
the body over in chunks and counts what was taken.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import Message

from backend.api.app import create_app
from backend.settings import Settings
from tests.support.accounts import TestAccount

LIMIT = 64 * 1024
HOSTILE = 35 * 1000 * 1000
CHUNK = 16 * 1024


@pytest.fixture
def limited(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_body_bytes": LIMIT})


@pytest.fixture
def app(limited: Settings) -> FastAPI:
    return create_app(limited, run_reaper=False)


class Sent:
    """A body of `size` bytes, handed to the app CHUNK bytes at a time; `taken` counts what it asked for."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.taken = 0

    async def receive(self) -> dict[str, Any]:
        if self.taken >= self.size:
            await asyncio.sleep(3600)  # the client waits for an answer (a disconnect never comes)
        piece = min(CHUNK, self.size - self.taken)
        self.taken += piece
        return {"type": "http.request", "body": b"0" * piece, "more_body": self.taken < self.size}


def _call(
    app: FastAPI, path: str, size: int, *, chunked: bool, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], int]:
    """POSTs a JSON body of `size` bytes: the answer's status and body, and how many bytes the app read."""
    raw = [(b"content-type", b"application/json")]
    raw += [(b"transfer-encoding", b"chunked")] if chunked else [(b"content-length", str(size).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": raw,
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
        "state": {},
    }
    body = Sent(size)
    answer: dict[str, Any] = {"body": b""}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    asyncio.run(asyncio.wait_for(app(scope, body.receive, send), timeout=30))
    return answer["status"], json.loads(answer["body"]), body.taken


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/projects"])
@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_no_credential_is_refused_without_reading_the_body(app: FastAPI, path: str, chunked: bool) -> None:
    status, answer, taken = _call(app, path, HOSTILE, chunked=chunked)
    assert status == 401 and answer["error"] == "unauthenticated"
    assert taken == 0


def test_a_declared_length_over_the_limit_is_refused_before_reading(
    app: FastAPI, account: TestAccount
) -> None:
    status, answer, taken = _call(app, "/api/v1/jobs", HOSTILE, chunked=False, headers=account.headers)
    assert status == 413 and answer["error"] == "request_too_large"
    assert f"larger than the limit of {LIMIT} bytes" in answer["detail"]
    assert "KNEEBOARD_MAX_BODY_BYTES" in answer["detail"]
    assert taken == 0


@pytest.mark.parametrize("path", ["/api/v1/jobs", "/api/v1/auth/login"])
def test_a_chunked_body_is_cut_off_at_the_limit(app: FastAPI, account: TestAccount, path: str) -> None:
    status, answer, taken = _call(app, path, HOSTILE, chunked=True, headers=account.headers)
    assert status == 413 and answer["error"] == "request_too_large"
    assert LIMIT < taken <= LIMIT + CHUNK  # read up to the limit, not one chunk further


def test_signing_in_with_a_huge_body_is_refused_before_reading(app: FastAPI) -> None:
    status, answer, taken = _call(app, "/api/v1/auth/login", HOSTILE, chunked=False)
    assert status == 413 and answer["error"] == "request_too_large"
    assert taken == 0


def test_a_real_body_over_the_limit_gets_413_and_health_still_answers(
    app: FastAPI, account: TestAccount
) -> None:
    hostile = json.dumps({"name": [0] * LIMIT})
    with TestClient(app, headers=account.headers) as client:
        refused = client.post(
            "/api/v1/projects", content=hostile, headers={"Content-Type": "application/json"}
        )
        assert refused.status_code == 413, refused.text
        assert refused.json()["error"] == "request_too_large"
        assert client.get("/api/v1/health").status_code == 200
        fine = client.post("/api/v1/projects", json={"name": "x" * 100})
        assert fine.status_code == 201, fine.text


def test_a_body_that_is_not_json_is_bounded_too(app: FastAPI, account: TestAccount) -> None:
    """FastAPI reads the whole body of a JSON route whatever its content type says."""
    with TestClient(app, headers=account.headers) as client:
        for content_type in ("text/plain", "multipart/form-data; boundary=x"):
            refused = client.post(
                "/api/v1/projects", content=b"0" * (LIMIT + 1), headers={"Content-Type": content_type}
            )
            assert refused.status_code == 413, (content_type, refused.text)


def test_uploads_keep_their_own_larger_limit(app: FastAPI, account: TestAccount, limited: Settings) -> None:
    assert limited.max_upload_bytes > 4 * LIMIT
    not_a_model = b"\x00" * (4 * LIMIT)
    with TestClient(app, headers=account.headers) as client:
        project = client.post("/api/v1/projects", json={"name": "uploads"}).json()
        upload = client.post(
            f"/api/v1/projects/{project['id']}/models",
            files={"file": ("model.onnx", not_a_model, "application/octet-stream")},
        )
    assert upload.status_code == 422, upload.text  # read whole and judged: not a model, rather than too large
    assert upload.json()["error"] == "invalid_upload"
