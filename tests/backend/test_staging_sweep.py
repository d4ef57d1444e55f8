"""Staging files that no upload will finish (an API killed mid-upload) are deleted at start and periodically;
an upload that streams for longer than its maximum life is cut off, so that the sweep never meets a live one."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from backend.api.app import create_app
from backend.api.multipart_upload import receive_upload
from backend.errors import InvalidUpload
from backend.settings import Settings
from backend.storage import LocalArtifactStore, sweep_staging

MAX_LIFE_S = 3600.0


def _staged(staging: Path, name: str, age_s: float) -> Path:
    path = staging / name
    path.write_bytes(b"half an upload")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_sweep_deletes_only_files_older_than_the_maximum_life(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    old = _staged(store.staging_dir, "upload-old", MAX_LIFE_S + 60)
    fresh = _staged(store.staging_dir, "upload-fresh", MAX_LIFE_S - 60)
    assert sweep_staging(store, MAX_LIFE_S) == [old]
    assert not old.exists() and fresh.exists()


def test_the_api_sweeps_at_start_and_then_periodically(settings: Settings, account: object) -> None:
    settings = settings.model_copy(update={"upload_max_life_s": MAX_LIFE_S, "staging_sweep_interval_s": 0.2})
    app = create_app(settings, run_reaper=False)
    staging = app.state.store.staging_dir
    killed_mid_upload = _staged(staging, "upload-killed", MAX_LIFE_S + 1)
    live = _staged(staging, "upload-live", 1)
    with TestClient(app):
        assert not killed_mid_upload.exists() and live.exists()  # swept before the first request
        later = _staged(staging, "upload-later", MAX_LIFE_S + 1)
        deadline = time.monotonic() + 10
        while later.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not later.exists()
        assert live.exists()


def test_an_upload_streaming_longer_than_its_maximum_life_is_cut_off(tmp_path: Path) -> None:
    """Against receive_upload itself: the test client would read the whole body before the app sees it."""

    async def trickle() -> dict[str, object]:
        await asyncio.sleep(0.2)
        return {"type": "http.request", "body": b"x" * 10, "more_body": True}

    first = b'--b\r\nContent-Disposition: form-data; name="file"; filename="m.onnx"\r\n\r\n'
    sent = [False]

    async def receive() -> dict[str, object]:
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": first, "more_body": True}
        return await trickle()

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(b"content-type", b"multipart/form-data; boundary=b")],
        "app": SimpleNamespace(state=SimpleNamespace(settings=Settings(upload_max_life_s=0.3))),
    }
    request = Request(scope, receive)  # type: ignore[arg-type]
    with pytest.raises(InvalidUpload, match="UPLOAD_MAX_LIFE_S"):
        asyncio.run(receive_upload(request, tmp_path / "staged", 10**6))
