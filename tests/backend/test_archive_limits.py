"""Hostile archives over the real API and Postgres: for every kind of upload that is a zip (a zipped ONNX
model, an .npz dataset, a zip of images), a zip bomb, a member outside the archive, a link, too many members
and too many bytes are each refused with a 422 that names the problem, before anything is inflated or
stored, and the server answers afterwards. The rules live in one place (dataset_readers/archives.py)."""

from __future__ import annotations

import io
import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.settings import Settings
from dataset_readers.archives import ArchiveLimits, archive_problem
from tests.backend.test_uploads import _counts, _stored_files
from tests.support import files
from tests.support.accounts import TestAccount
from tests.support.images import png_bytes

BOMB_BYTES = 1 << 30
"""A member of 1 GiB of zeros, deflated to about a megabyte."""


def _zeros_deflated(size: int) -> tuple[bytes, int]:
    """Raw deflate data of `size` zero bytes, and its CRC-32, without compressing `size` bytes: one MiB is
    compressed once, ending in a full flush (so that the next copy does not refer back to it), and repeated."""
    block = 1 << 20
    assert size % block == 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = compressor.compress(bytes(block)) + compressor.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)  # an empty last block
    crc = 0
    zeros = bytes(block)
    for _ in range(size // block):
        crc = zlib.crc32(zeros, crc)
    return chunk * (size // block) + final, crc


_BOMB_CACHE: dict[int, tuple[bytes, int]] = {}


def zip_with_bomb(members: dict[str, bytes], bomb_name: str, size: int = BOMB_BYTES) -> bytes:
    """A zip of `members` plus `bomb_name`: `size` zero bytes, really deflated (zipfile inflates them)."""
    if size not in _BOMB_CACHE:
        _BOMB_CACHE[size] = _zeros_deflated(size)
    data, crc = _BOMB_CACHE[size]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
        zf.writestr(bomb_name, data)  # stored as it is; the headers are then made to say "deflated"
    out = bytearray(buf.getvalue())
    central = out.index(b"PK\x01\x02")  # the directory entries follow each other, the bomb's last
    while out[central + 46 : central + 46 + len(bomb_name)] != bomb_name.encode():
        central = out.index(b"PK\x01\x02", central + 4)
    local = int.from_bytes(out[central + 42 : central + 46], "little")
    out[local + 8 : local + 10] = out[central + 10 : central + 12] = struct.pack("<H", zipfile.ZIP_DEFLATED)
    out[local + 14 : local + 18] = out[central + 16 : central + 20] = struct.pack("<L", crc)
    out[local + 22 : local + 26] = out[central + 24 : central + 28] = struct.pack("<L", size)
    return bytes(out)


def test_the_bomb_is_a_real_one() -> None:
    """zipfile reads it as a 1 GiB member of zeros: the checks refuse what a reader would inflate."""
    data = zip_with_bomb({"a.txt": b"hello"}, "zeros.bin")
    assert len(data) < 2 << 20
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        info = zf.getinfo("zeros.bin")
        assert info.file_size == BOMB_BYTES and info.compress_type == zipfile.ZIP_DEFLATED
        with zf.open(info) as member:
            assert member.read(4 << 20) == bytes(4 << 20)
        assert zf.read("a.txt") == b"hello"
    small = zip_with_bomb({}, "zeros.bin", size=8 << 20)
    with zipfile.ZipFile(io.BytesIO(small)) as zf:
        assert zf.read("zeros.bin") == bytes(8 << 20)  # every byte, and the CRC checks out


def _symlink_zip(members: dict[str, bytes], link: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
        info = zipfile.ZipInfo(link)
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


def _many(members: dict[str, bytes], n: int) -> dict[str, bytes]:
    return members | {f"extra/{i}.txt": b"x" for i in range(n)}


# Each kind of zip upload: where it goes, its file name, and the members of a good one.
def _npz_members() -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(files.npz_bytes(input=np.zeros((2, 4), np.float32)))) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


KINDS: dict[str, tuple[str, str, dict[str, bytes]]] = {
    "model-zip": ("models", "model.zip", {"model/model.onnx": files.minimal_onnx_bytes()}),
    "npz": ("datasets", "data.npz", _npz_members()),
    "image-zip": ("datasets", "photos.zip", {"photos/a.png": png_bytes(np.zeros((4, 4, 3), dtype=np.uint8))}),
}

LOW_LIMITS = {"archive_max_members": 50, "archive_max_uncompressed_bytes": 2 << 20}
"""Lowered for the tests of the count and size limits (a good archive of each kind stays within them)."""

HOSTILE: dict[str, tuple[Callable[[dict[str, bytes]], bytes], str, dict[str, int]]] = {
    # 1 GiB from a megabyte: refused for its expansion alone, under the default limits.
    "zip-bomb": (
        lambda good: zip_with_bomb(good, "payload.bin"),
        "member 'payload.bin' expands 1011 times (1073741824 bytes from",
        {"archive_max_uncompressed_bytes": 8 << 30},  # so that the expansion rule is the one tested
    ),
    "parent-path": (
        lambda good: files.zip_bytes(good | {"../../evil.sh": b"echo owned"}),
        "'../../evil.sh' points outside the archive",
        {},
    ),
    "absolute-path": (
        lambda good: files.zip_bytes(good | {"/etc/cron.d/evil": b"x"}),
        "'/etc/cron.d/evil' has an absolute path",
        {},
    ),
    "symlink": (lambda good: _symlink_zip(good, "link.bin"), "'link.bin' is a symbolic link", {}),
    "too-many-members": (
        lambda good: files.zip_bytes(_many(good, 60)),
        "members; at most 50 are accepted (KNEEBOARD_ARCHIVE_MAX_MEMBERS)",
        LOW_LIMITS,
    ),
    "too-many-bytes": (
        lambda good: files.zip_bytes(good | {"noise.bin": os.urandom(3 << 20)}),
        "bytes; at most 2097152 are accepted (KNEEBOARD_ARCHIVE_MAX_UNCOMPRESSED_BYTES)",
        LOW_LIMITS,
    ),
}


@contextmanager
def limited_client(settings: Settings, account: TestAccount, **values: int) -> Iterator[TestClient]:
    """The API with these archive_* settings (the upload checks use the app's own settings)."""
    app = create_app(settings.model_copy(update=values), run_reaper=False)
    with TestClient(app, headers=account.headers) as c:
        yield c


def _upload(client: TestClient, project: dict[str, Any], route: str, filename: str, data: bytes) -> Any:
    return client.post(f"/api/v1/projects/{project['id']}/{route}", files={"file": (filename, data)})


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_good_archive_of_each_kind_is_accepted(
    project: dict[str, Any], settings: Settings, account: TestAccount, kind: str
) -> None:
    """The same limits as below, so that the refusals are about the hostile part only."""
    route, filename, good = KINDS[kind]
    with limited_client(settings, account, **LOW_LIMITS) as limited:
        response = _upload(limited, project, route, filename, files.zip_bytes(good))
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("hostile", list(HOSTILE))
@pytest.mark.parametrize("kind", list(KINDS))
def test_hostile_archives_are_refused_before_anything_is_inflated_or_stored(
    client: TestClient,
    project: dict[str, Any],
    settings: Settings,
    account: TestAccount,
    kind: str,
    hostile: str,
) -> None:
    route, filename, good = KINDS[kind]
    make, message, limits = HOSTILE[hostile]
    data = make(good)
    assert len(data) < settings.max_upload_bytes, "refused for what it holds, not for its size"
    with limited_client(settings, account, **limits) as limited:
        response = _upload(limited, project, route, filename, data)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_upload" and message in body["detail"], body["detail"]
    assert _stored_files(settings) == []
    assert _counts(settings) == {"Artifact": 0, "Model": 0, "Dataset": 0, "Job": 0}
    assert client.get("/api/v1/health").json()["status"] == "ok"


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        ({"a/../../b": 1}, "points outside the archive"),
        ({"C:/windows/x": 1}, "absolute path"),
        ({"\\\\server\\share": 1}, "absolute path"),
        ({"ok.txt": 1, "dir/": 0}, None),
    ],
)
def test_member_paths(members: dict[str, int], problem: str | None) -> None:
    infos = [zipfile.ZipInfo(name) for name in members]
    for info, size in zip(infos, members.values(), strict=True):
        info.file_size = info.compress_size = size
    found = archive_problem(infos, 1 << 20, ArchiveLimits())
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_overlapping_members_are_refused() -> None:
    """A bomb may point many directory entries at the same compressed data: their compressed sizes then
    add up to more than the file."""
    infos = []
    for i in range(10):
        info = zipfile.ZipInfo(f"m{i}")
        info.file_size = info.compress_size = 1 << 20
        infos.append(info)
    assert "overlap" in (archive_problem(infos, 2 << 20, ArchiveLimits()) or "")
    assert archive_problem(infos, 11 << 20, ArchiveLimits()) is None
