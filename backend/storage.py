"""Artifact store: uploads are streamed to disk while hashed, then kept under their sha256.

The same bytes uploaded twice are stored once. The backend is chosen by URI scheme: ``file://`` for a local
directory (default), ``s3://bucket/prefix`` for S3-compatible object storage through boto3.
Readers (workers) ask for ``local_path(sha)``: the file itself for the local store, a cached download for S3.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from backend.errors import StorageError

CHUNK = 1024 * 1024


@dataclass(frozen=True)
class StagedFile:
    """An upload written to a private temporary file, hashed and measured, not yet in the store."""

    path: Path
    sha256: str
    size_bytes: int


class ArtifactStore(Protocol):
    def exists(self, sha256: str) -> bool: ...

    def put(self, staged: StagedFile) -> bool:
        """Move a staged file into the store. Returns True when the bytes were new to the store."""
        ...

    def delete(self, sha256: str) -> None: ...

    def local_path(self, sha256: str) -> Path:
        """A readable local file with the artifact's bytes."""
        ...

    @property
    def staging_dir(self) -> Path: ...


def _shard(sha256: str) -> str:
    return f"{sha256[:2]}/{sha256}"


class LocalArtifactStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self._staging = root / ".staging"
        self._staging.mkdir(exist_ok=True)

    @property
    def staging_dir(self) -> Path:
        return self._staging

    def _path(self, sha256: str) -> Path:
        return self.root / _shard(sha256)

    def exists(self, sha256: str) -> bool:
        return self._path(sha256).is_file()

    def put(self, staged: StagedFile) -> bool:
        target = self._path(staged.sha256)
        if target.is_file():
            staged.path.unlink(missing_ok=True)
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged.path, target)  # atomic within one filesystem: readers never see half a file
        return True

    def delete(self, sha256: str) -> None:
        self._path(sha256).unlink(missing_ok=True)

    def local_path(self, sha256: str) -> Path:
        path = self._path(sha256)
        if not path.is_file():
            raise StorageError(f"artifact {sha256} is missing from the store at {self.root}")
        return path


class S3ArtifactStore:
    """S3-compatible object storage. Objects are keyed ``prefix/ab/abcdef...``; reads are cached locally."""

    def __init__(self, bucket: str, prefix: str, cache_dir: Path, endpoint_url: str | None = None) -> None:
        import boto3  # imported here so the local store works without touching AWS configuration

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client: Any = boto3.client("s3", endpoint_url=endpoint_url)
        self.cache_dir = cache_dir
        self._staging = cache_dir / ".staging"
        self._staging.mkdir(parents=True, exist_ok=True)

    @property
    def staging_dir(self) -> Path:
        return self._staging

    def _key(self, sha256: str) -> str:
        return f"{self.prefix}/{_shard(sha256)}" if self.prefix else _shard(sha256)

    def exists(self, sha256: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(sha256))
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise StorageError(f"S3 store unavailable: {exc}") from exc

    def put(self, staged: StagedFile) -> bool:
        try:
            if self.exists(staged.sha256):
                return False
            self.client.upload_file(
                str(staged.path), self.bucket, self._key(staged.sha256)
            )  # multipart if big
            return True
        finally:
            staged.path.unlink(missing_ok=True)

    def delete(self, sha256: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(sha256))
        (self.cache_dir / _shard(sha256)).unlink(missing_ok=True)

    def local_path(self, sha256: str) -> Path:
        cached = self.cache_dir / _shard(sha256)
        if cached.is_file():
            return cached
        cached.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._staging)
        os.close(fd)
        try:
            self.client.download_file(self.bucket, self._key(sha256), tmp)
            os.replace(tmp, cached)
        except Exception as exc:
            Path(tmp).unlink(missing_ok=True)
            raise StorageError(f"could not fetch artifact {sha256} from s3://{self.bucket}: {exc}") from exc
        return cached


def store_from_uri(uri: str, cache_dir: Path, s3_endpoint_url: str | None = None) -> ArtifactStore:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return LocalArtifactStore(Path(parsed.path))
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ValueError(f"artifact URI {uri!r} names no bucket (expected s3://bucket/prefix)")
        return S3ArtifactStore(parsed.netloc, parsed.path, cache_dir, endpoint_url=s3_endpoint_url)
    raise ValueError(f"unsupported artifact URI {uri!r}: use file:///path or s3://bucket/prefix")


@contextmanager
def staging_file(store: ArtifactStore) -> Iterator[Path]:
    """A private temp file in the store's staging area, removed on exit unless it was moved away."""
    fd, name = tempfile.mkstemp(dir=store.staging_dir, prefix="upload-")
    os.close(fd)
    path = Path(name)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def sweep_staging(store: ArtifactStore, max_age_s: float, now: float | None = None) -> list[Path]:
    """Delete the staging files not written for max_age_s (uploads cut off by a killed API, downloads of a
    killed worker); returns what was deleted. The age is the file's mtime, which every write of a streaming
    upload renews, so a live upload (cut off at KNEEBOARD_UPLOAD_MAX_LIFE_S) is never swept."""
    cutoff = (time.time() if now is None else now) - max_age_s
    swept = []
    for entry in os.scandir(store.staging_dir):
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                swept.append(Path(entry.path))
        except FileNotFoundError:  # moved into the store or deleted meanwhile
            continue
    return swept


def copy_file_to_staging(src: Path, store: ArtifactStore) -> StagedFile:
    """Stage a file that is already on local disk (CLI imports, derived artifacts)."""
    digest = hashlib.sha256()
    fd, name = tempfile.mkstemp(dir=store.staging_dir, prefix="copy-")
    size = 0
    with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
        while chunk := inp.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    return StagedFile(path=Path(name), sha256=digest.hexdigest(), size_bytes=size)
