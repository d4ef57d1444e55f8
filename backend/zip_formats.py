"""Reading uploaded zip archives (zipped ONNX models, torch archives, .npz files, zips of images), which may be
damaged, truncated or hostile.

``zipfile`` reports such an archive in many ways besides ``BadZipFile``, most of them only when a member is
opened or read: a bad CRC, an unsupported compression method or zip version (NotImplementedError), an
encrypted member (RuntimeError), a header that points before the start of the file (OSError), data that ends
early (EOFError), a member name flagged UTF-8 that is not (UnicodeDecodeError), corrupt deflate or LZMA data.
``unreadable_zip`` turns every one of them into an InvalidUpload that says what to do.
"""

from __future__ import annotations

import lzma
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from backend.errors import InvalidUpload

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
    """Inside: a failure of zipfile on the archive becomes InvalidUpload("<what> …: <why>; <advice>")."""
    try:
        yield
    except InvalidUpload:
        raise
    except UNREADABLE_ZIP_ERRORS as exc:
        raise InvalidUpload(
            f"{what} cannot be read as a zip archive ({describe_zip_error(exc)}); {advice}"
        ) from exc
