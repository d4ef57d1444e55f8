"""The S3 artifact store against an S3-compatible server on loopback (moto's server mode, which speaks the
S3 HTTP API; no AWS account is reachable from CI)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.settings import Settings
from backend.storage import S3ArtifactStore, copy_file_to_staging, store_from_uri
from tests.conftest import truncate_all
from tests.support import files
from tests.support.accounts import account_in
from tests.support.services import free_port


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    saved = {
        k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    }
    os.environ.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1")
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="kb-artifacts")
    yield endpoint
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def test_put_is_content_addressed_and_reads_back(s3_endpoint: str, tmp_path: Path) -> None:
    store = store_from_uri("s3://kb-artifacts/artifacts", tmp_path / "cache", s3_endpoint)
    assert isinstance(store, S3ArtifactStore)
    src = tmp_path / "model.bin"
    src.write_bytes(b"weights" * 1000)
    first = copy_file_to_staging(src, store)
    assert store.put(first) is True and not first.path.exists()
    second = copy_file_to_staging(src, store)
    assert store.put(second) is False, "the same bytes are stored once"
    keys = [
        o["Key"]
        for o in boto3.client("s3", endpoint_url=s3_endpoint).list_objects_v2(Bucket="kb-artifacts")[
            "Contents"
        ]
    ]
    assert keys == [f"artifacts/{first.sha256[:2]}/{first.sha256}"]
    assert store.local_path(first.sha256).read_bytes() == src.read_bytes()
    store.delete(first.sha256)
    assert not store.exists(first.sha256)


def test_api_uploads_to_s3(s3_endpoint: str, pg_url: str, tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=pg_url,
        broker_url="filesystem://",
        artifact_uri="s3://kb-artifacts/api",
        s3_endpoint_url=s3_endpoint,
        seed_demo=False,
    )
    truncate_all(pg_url)
    account = account_in(pg_url)
    with TestClient(create_app(settings, run_reaper=False), headers=account.headers) as client:
        project: dict[str, Any] = client.post("/api/v1/projects", json={"name": "s3"}).json()
        response = client.post(
            f"/api/v1/projects/{project['id']}/models", files={"file": ("m.onnx", files.minimal_onnx_bytes())}
        )
        assert response.status_code == 201, response.text
        sha = response.json()["artifact_sha256"]
        bad = client.post(
            f"/api/v1/projects/{project['id']}/models", files={"file": ("x.onnx", b"junk text")}
        )
        assert bad.status_code == 422
    listed = boto3.client("s3", endpoint_url=s3_endpoint).list_objects_v2(
        Bucket="kb-artifacts", Prefix="api/"
    )
    assert [o["Key"] for o in listed["Contents"]] == [f"api/{sha[:2]}/{sha}"]
    truncate_all(pg_url)
