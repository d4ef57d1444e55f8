"""Reading uploaded zip archives (zipped ONNX models, torch archives, .npz files, zips of images), which may be
damaged, truncated or hostile.

``zipfile`` reports such an archive in many ways besides ``BadZipFile``, most of them only when a member is
opened or read: a bad CRC, an unsupported compression method or zip version (NotImplementedError), an
encrypted member (RuntimeError), a header that points before the start of the file (OSError), data that ends
early (EOFError), a member name flagged UTF-8 that is not (UnicodeDecodeError), corrupt deflate or LZMA data.
``unreadable_zip`` turns every one of them into a DatasetFormatError that says what to do.

Every archive the API or a worker opens is first checked against one set of rules, ``archive_problem`` /
``check_archive``: a member count, a total uncompressed size and an expansion ratio (zip bombs, read from the
directory alone), no absolute paths or '..' (path traversal), no links or other special files, no duplicate
names. The rules live here, beside the dataset readers that apply them, so that the API (upload checks of
datasets and models) and the workers (extraction, job inputs) share one copy. The limits come from the
settings (KNEEBOARD_ARCHIVE_*); this package reads no settings, so its callers pass them in
(``backend.archive_limits.archive_limits``).
"""

from __future__ import annotations

import lzma
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from dataset_readers.errors import DatasetFormatError

UNREADABLE_ZIP_ERRORS: tuple[type[Exception], ...] = (
    zipfile.BadZipFile,
    NotImplementedError,
    RuntimeError,
    OSError,
    EOFError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
    struct.error,
)


def describe_zip_error(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "a member is encrypted"
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "…"


@contextmanager
def unreadable_zip(what: str, advice: str) -> Iterator[None]:
    """Inside: a failure of zipfile on the archive becomes DatasetFormatError("<what> …: <why>; <advice>")."""
    try:
        yield
    except DatasetFormatError:
        raise
    except UNREADABLE_ZIP_ERRORS as exc:
        raise DatasetFormatError(
            f"{what} cannot be read as a zip archive ({describe_zip_error(exc)}); {advice}"
        ) from exc


@dataclass(frozen=True)
class ArchiveLimits:
    """What an uploaded archive may hold. The sizes are the ones its directory declares: zipfile never
    returns more bytes than a member declares (it fails the member's CRC instead), so they bound what any
    reader of the archive (the API's checks, the worker's extraction, numpy, torch) can be made to inflate."""

    max_members: int = 200_000
    max_uncompressed_bytes: int = 8 * 1024**3
    max_expansion: float = 200.0
    """Uncompressed per compressed byte, of the whole archive and of each member, beyond which it is a bomb."""
    bomb_floor_bytes: int = 64 * 1024**2
    """Whatever expands to less than this is never called a bomb (small, very regular files compress 1000x)."""


_UNSAFE_TYPES = {stat.S_IFLNK: "a symbolic link", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
                 stat.S_IFIFO: "a pipe", stat.S_IFSOCK: "a socket"}  # fmt: skip


def member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why extracting this member could write outside its folder or create something other than a plain
    file or folder; None when it is safe."""
    name = info.filename
    posix = PurePosixPath(name.replace("\\", "/"))
    if not name or posix.is_absolute() or PureWindowsPath(name).drive or name.startswith(("/", "\\")):
        return f"member {name!r} has an absolute path, which points outside the archive"
    if ".." in posix.parts:
        return f"member {name!r} points outside the archive ('..')"
    kind = _UNSAFE_TYPES.get(stat.S_IFMT(info.external_attr >> 16))
    if kind is not None:
        return f"member {name!r} is {kind}; archives may hold only files and folders (no links)"
    return None


def archive_problem(
    infos: Sequence[zipfile.ZipInfo], archive_bytes: int, limits: ArchiveLimits
) -> str | None:
    """The first way in which an archive (its directory: `infos`, its size on disk: `archive_bytes`) breaks
    the limits or holds an unsafe member, as a phrase that completes "<the archive> …"; None when it is fine.
    Reads only the directory, so a bomb is refused without inflating a byte of it."""
    if len(infos) > limits.max_members:
        return (
            f"holds {len(infos)} members; at most {limits.max_members} are accepted "
            "(KNEEBOARD_ARCHIVE_MAX_MEMBERS)"
        )
    names: set[str] = set()
    for info in infos:
        problem = member_problem(info)
        if problem is not None:
            return problem
        if info.filename in names:
            return f"holds member {info.filename!r} twice; an archive with duplicate names is ambiguous"
        names.add(info.filename)
    total = sum(info.file_size for info in infos)
    if total > limits.max_uncompressed_bytes:
        return (
            f"expands to {total} bytes; at most {limits.max_uncompressed_bytes} are accepted "
            "(KNEEBOARD_ARCHIVE_MAX_UNCOMPRESSED_BYTES): refusing a possible zip bomb"
        )
    for info in infos:
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > limits.bomb_floor_bytes and ratio > limits.max_expansion:
            return (
                f"member {info.filename!r} expands {ratio:.0f} times ({info.file_size} bytes from "
                f"{info.compress_size}; at most {limits.max_expansion:g} times, KNEEBOARD_ARCHIVE_MAX_EXPANSION): "
                "refusing a zip bomb"
            )
    ratio = total / max(archive_bytes, 1)
    if total > limits.bomb_floor_bytes and ratio > limits.max_expansion:
        return (
            f"expands {ratio:.0f} times ({total} bytes from {archive_bytes}; at most {limits.max_expansion:g} "
            "times, KNEEBOARD_ARCHIVE_MAX_EXPANSION): refusing a zip bomb"
        )
    if sum(info.compress_size for info in infos) > archive_bytes:
        return "has members that overlap each other (their compressed sizes exceed the file): refusing a zip bomb"
    return None


def check_archive(zf: zipfile.ZipFile, what: str, archive_bytes: int, limits: ArchiveLimits) -> None:
    """Refuse, with DatasetFormatError("<what> <problem>"), an archive that breaks the limits or holds a
    member with an unsafe path or type. Call it before reading any member."""
    problem = archive_problem(zf.infolist(), archive_bytes, limits)
    if problem is not None:
        raise DatasetFormatError(f"{what} {problem}")
