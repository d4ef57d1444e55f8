"""Bounded memory of dataset previews in a real API process (uvicorn, real Postgres), measured as the growth
of its peak RSS (/proc VmHWM, reset before the measured part).

- A zip of four 9000x9000 PNGs (0.9 MB) is refused at upload, naming the pixel limit; the same zip stored
  before the limit existed previews as "over the limit" without decoding anything.
- Four PNGs just under the limit (5000x5000, 25 megapixels: 100 MB each decoded) preview and draw 16
  thumbnails, 8 requests at a time, while the render pool decodes at most two at once.
"""

from __future__ import annotations

import io
import struct
import time
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from PIL import Image
from sqlalchemy.orm import Session

from backend.db.models import Artifact, Dataset
from backend.db.session import session_factory
from backend.settings import Settings
from backend.storage import copy_file_to_staging, store_from_uri
from tests.conftest import truncate_all
from tests.support.accounts import TestAccount, add_account
from tests.support.services import start_api

MB = 1024 * 1024
RSS_GROWTH_LIMIT = 400 * MB


def solid_png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A PNG of one colour, written row by row (no full-size buffer in the test process either)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def image_zip(png: bytes, count: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:
        for i in range(count):
            zf.writestr(f"img{i}.png", png)
    return buffer.getvalue()


def _tree(root: int) -> list[int]:
    """root and its descendants (uvicorn may run worker processes)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    pids, frontier = [root], [root]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        pids += children
        frontier = children
    return pids


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} missing for {pid}")


def rss_bytes(root: int) -> int:
    return sum(_status_kb(pid, "VmRSS") for pid in _tree(root)) * 1024


def reset_peak(root: int) -> None:
    for pid in _tree(root):
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := current RSS (Linux 4.0+)


def peak_bytes(root: int) -> int:
    return sum(_status_kb(pid, "VmHWM") for pid in _tree(root)) * 1024


@pytest.fixture
def owner(settings: Settings) -> Iterator[TestAccount]:
    truncate_all(settings.resolved_database_url)
    with session_factory(settings.resolved_database_url)() as session:
        yield add_account(session)
    truncate_all(settings.resolved_database_url)


def _store_without_checks(settings: Settings, project_id: str, data: bytes, tmp: Path) -> str:
    """A dataset stored the way an older Kneeboard, without the pixel limit, accepted it."""
    store = store_from_uri(settings.resolved_artifact_uri, settings.data_dir / "artifact-cache")
    source = tmp / "legacy.zip"
    source.write_bytes(data)
    staged = copy_file_to_staging(source, store)
    store.put(staged)
    dataset_id = uuid.uuid4()
    with session_factory(settings.resolved_database_url)() as session:
        _add_dataset_rows(session, dataset_id, uuid.UUID(project_id), staged.sha256, len(data))
    return str(dataset_id)


def _add_dataset_rows(
    session: Session, dataset_id: uuid.UUID, project: uuid.UUID, sha: str, size: int
) -> None:
    session.add(Artifact(sha256=sha, size_bytes=size))
    session.flush()
    session.add(
        Dataset(
            id=dataset_id,
            project_id=project,
            name="legacy",
            filename="legacy.zip",
            kind="image_zip",
            artifact_sha256=sha,
            size_bytes=size,
            n_samples=4,
            arrays={"input": {"shape": [4, 3, 224, 224], "dtype": "float32"}},
            preprocessing={},
        )
    )
    session.commit()


def _thumbnails(client: httpx.Client, dataset_id: str) -> list[httpx.Response]:
    paths = [f"/api/v1/datasets/{dataset_id}/samples/{i % 4}/thumbnail.png" for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(client.get, paths))


def test_previews_of_huge_images_keep_the_api_rss_bounded(
    settings: Settings, owner: TestAccount, tmp_path: Path
) -> None:
    huge_zip = image_zip(solid_png(9000, 9000, (10, 20, 30)), 4)
    at_limit_zip = image_zip(solid_png(5000, 5000, (200, 100, 50)), 4)
    small_zip = image_zip(solid_png(64, 48, (1, 2, 3)), 2)
    assert len(huge_zip) < 2 * MB and settings.image_max_pixels == 5000 * 5000
    if "api_processes" in Settings.model_fields:  # one process: the RSS measured is the one that decodes
        settings = settings.model_copy(update={"api_processes": 1})
    api, base = start_api(settings, tmp_path / "api.log")
    try:
        with httpx.Client(base_url=base, headers=owner.headers, timeout=120) as client:
            project = client.post("/api/v1/projects", json={"name": "previews"}).json()["id"]

            def upload(name: str, data: bytes) -> httpx.Response:
                return client.post(f"/api/v1/projects/{project}/datasets", files={"file": (name, data)})

            small = upload("small.zip", small_zip).json()["id"]  # warm up: Pillow, zlib, the routes
            assert client.get(f"/api/v1/datasets/{small}/samples/0/thumbnail.png").status_code == 200
            assert client.get(f"/api/v1/datasets/{small}/samples").status_code == 200
            time.sleep(0.5)
            baseline = rss_bytes(api.popen.pid)
            reset_peak(api.popen.pid)

            refused = upload("huge.zip", huge_zip)
            assert refused.status_code == 422, refused.text
            assert "9000x9000" in refused.json()["detail"] and "25,000,000" in refused.json()["detail"]
            assert "KNEEBOARD_IMAGE_MAX_PIXELS" in refused.json()["detail"]

            legacy = _store_without_checks(settings, project, huge_zip, tmp_path)
            listed = client.get(f"/api/v1/datasets/{legacy}/samples").json()["items"]
            assert [s["image"] for s in listed] == [False] * 4
            assert all("over the limit of 25,000,000 pixels" in s["error"] for s in listed)
            assert {r.status_code for r in _thumbnails(client, legacy)} == {409}

            accepted = upload("at-limit.zip", at_limit_zip)
            assert accepted.status_code == 201, accepted.text
            dataset = accepted.json()["id"]
            thumbs = _thumbnails(client, dataset)
            assert [r.status_code for r in thumbs] == [200] * 16, {r.status_code: r.text for r in thumbs}
            drawn = Image.open(io.BytesIO(thumbs[0].content))
            assert drawn.size == (128, 128) and drawn.getpixel((5, 5)) == (200, 100, 50)
            stats = client.get(f"/api/v1/datasets/{dataset}/samples").json()["items"]
            assert [s["arrays"]["image"]["shape"] for s in stats] == [[5000, 5000, 3]] * 4
            assert {(s["arrays"]["image"]["min"], s["arrays"]["image"]["max"]) for s in stats} == {(50, 200)}
            growth = peak_bytes(api.popen.pid) - baseline
    finally:
        api.stop()
    print(f"API peak RSS growth {growth / MB:.0f} MB (baseline {baseline / MB:.0f} MB)")
    assert growth < RSS_GROWTH_LIMIT
