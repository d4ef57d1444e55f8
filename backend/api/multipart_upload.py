"""Receive a multipart upload straight into the artifact store's staging area.

Starlette's form parsing spools each file to a temporary file before the route runs; for model files of
several GB that is a second full write. Here the request body is parsed as it streams (python-multipart's
incremental parser) and the file part goes directly to the staging file, hashed and size-checked on the way.
Small form fields are kept in memory (capped).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header
from starlette.requests import ClientDisconnect, Request

from backend.api.validation import unstorable_json
from backend.errors import InvalidUpload, UploadTooLarge
from backend.storage import StagedFile

MAX_FIELD_BYTES = 64 * 1024
CUT_SHORT = (
    "the upload ended before its multipart body did (no closing boundary): it was cut short; upload the "
    "file again"
)
MAX_FILENAME_CHARS = 255  # what file systems allow; the filename column holds 500
NUL = "\x00"
FILE_FIELD = "file"


@dataclass
class _State:
    staging: Path
    limit: int
    headers: dict[bytes, bytes] = field(default_factory=dict)
    header_field: bytes = b""
    header_value: bytes = b""
    part_name: str | None = None
    part_filename: str | None = None
    field_bytes: bytearray = field(default_factory=bytearray)
    fields: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    digest: Any = field(default_factory=hashlib.sha256)
    size: int = 0
    out: Any = None


def _callbacks(state: _State) -> dict[str, Any]:
    def on_part_begin() -> None:
        state.headers, state.part_name, state.part_filename = {}, None, None
        state.field_bytes = bytearray()

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state.header_field += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        state.header_value += data[start:end]

    def on_header_end() -> None:
        state.headers[state.header_field.lower()] = state.header_value
        state.header_field, state.header_value = b"", b""

    def on_headers_finished() -> None:
        _disposition, options = parse_options_header(state.headers.get(b"content-disposition", b""))
        state.part_name = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        state.part_filename = filename.decode("utf-8", "replace") if filename is not None else None
        if state.part_name == FILE_FIELD:
            if state.out is not None:
                raise InvalidUpload("send exactly one file, in the multipart field 'file'")
            state.filename = Path(state.part_filename or "").name
            state.out = state.staging.open("wb")

    def on_part_data(data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if state.part_name == FILE_FIELD:
            state.size += len(chunk)
            if state.size > state.limit:
                raise UploadTooLarge(
                    f"upload is larger than the limit of {state.limit} bytes "
                    "(raise KNEEBOARD_MAX_UPLOAD_BYTES if this file is expected)"
                )
            state.digest.update(chunk)
            state.out.write(chunk)
        else:
            state.field_bytes += chunk
            if len(state.field_bytes) > MAX_FIELD_BYTES:
                raise InvalidUpload(f"form field {state.part_name!r} is longer than {MAX_FIELD_BYTES} bytes")

    def on_part_end() -> None:
        if state.part_name and state.part_name != FILE_FIELD:
            state.fields[state.part_name] = state.field_bytes.decode("utf-8", "replace")

    return {
        "on_part_begin": on_part_begin,
        "on_header_field": on_header_field,
        "on_header_value": on_header_value,
        "on_header_end": on_header_end,
        "on_headers_finished": on_headers_finished,
        "on_part_data": on_part_data,
        "on_part_end": on_part_end,
    }


async def receive_upload(
    request: Request, staging: Path, limit_bytes: int
) -> tuple[StagedFile, str, dict[str, str]]:
    """Stream the request's multipart body: the 'file' part into ``staging``; returns it with its original
    file name and the other (small) form fields."""
    content_type, params = parse_options_header(request.headers.get("content-type", ""))
    boundary = params.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise InvalidUpload(
            "send the upload as multipart/form-data with the file in the field 'file' (curl -F file=@model.onnx)"
        )
    state = _State(staging=staging, limit=limit_bytes)
    max_life_s = _max_life_s(request)
    try:
        # The constructor refuses a boundary it cannot use (e.g. longer than 256 bytes): also malformed.
        parser = MultipartParser(boundary, _callbacks(state))  # type: ignore[arg-type]
        # Bounded, so that the staging sweep (backend/storage.py) can tell abandoned files by their age.
        async with asyncio.timeout(max_life_s):
            async for chunk in request.stream():
                parser.write(chunk)
        parser.finalize()
    except TimeoutError as exc:
        raise InvalidUpload(
            f"the upload took longer than {max_life_s:g} s (KNEEBOARD_UPLOAD_MAX_LIFE_S) and was cut off; "
            "upload it again over a faster connection"
        ) from exc
    except FormParserError as exc:
        raise InvalidUpload(
            f"the multipart body is malformed ({exc}); send the file with curl -F file=@PATH"
        ) from exc
    except ClientDisconnect as exc:
        raise InvalidUpload(CUT_SHORT) from exc
    finally:
        if state.out is not None:
            state.out.close()
    if state.out is None:
        raise InvalidUpload(
            "no file in the upload: send it in the multipart field 'file' (curl -F file=@model.onnx)"
        )
    # python-multipart's finalize() does not check that the body reached its closing boundary; a body
    # that stops early would otherwise store a file that is cut short.
    if parser.state != MultipartState.END:
        raise InvalidUpload(CUT_SHORT)
    filename = state.filename or "upload"
    if len(filename) > MAX_FILENAME_CHARS:
        raise InvalidUpload(
            f"the file name is {len(filename)} characters long; rename the file to at most "
            f"{MAX_FILENAME_CHARS} characters and upload it again"
        )
    if NUL in filename:
        raise InvalidUpload(
            "the file name contains a NUL (\\x00) character; rename the file and upload it again"
        )
    staged = StagedFile(path=staging, sha256=state.digest.hexdigest(), size_bytes=state.size)
    return staged, filename, state.fields


def _max_life_s(request: Request) -> float | None:
    settings = getattr(request.app.state, "settings", None)
    return getattr(settings, "upload_max_life_s", None)


def multipart_openapi(description: str, fields: dict[str, str]) -> dict[str, Any]:
    """OpenAPI requestBody for a route that reads its multipart body itself."""
    properties: dict[str, Any] = {
        FILE_FIELD: {"type": "string", "format": "binary", "description": description}
    }
    properties |= {name: {"type": "string", "description": text} for name, text in fields.items()}
    return {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {"type": "object", "required": [FILE_FIELD], "properties": properties}
                }
            },
        }
    }


def form_text(fields: dict[str, str], name: str, max_length: int = 200) -> str | None:
    """An optional text field, stripped; refuses one longer than max_length or holding a NUL character."""
    value = fields.get(name, "").strip()
    if len(value) > max_length:
        raise InvalidUpload(f"{name} is longer than {max_length} characters")
    if NUL in value:
        raise InvalidUpload(f"{name} must not contain NUL (\\x00) characters")
    return value or None


def default_name(filename: str, max_length: int = 200) -> str:
    """The display name of an upload sent without one: its file name, cut to the length a name may have."""
    return filename[:max_length]


def form_json(fields: dict[str, str], name: str, example: str) -> Any:
    """An optional form field holding JSON (None when absent or empty). Only standard JSON is accepted:
    no NaN or Infinity (nor 1e999, which Python reads as infinity), no NUL characters, no nesting deeper
    than the parser allows; the error names the field and shows an example."""
    raw = fields.get(name, "")
    if not raw.strip():
        return None
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError as exc:
        raise InvalidUpload(f"{name} is nested too deeply to be {example}") from exc
    except ValueError as exc:  # JSONDecodeError and the constants refused above
        raise InvalidUpload(f"{name} must be JSON like {example}: {exc}") from exc
    problem = unstorable_json(value, root=(name,))
    if problem:
        raise InvalidUpload(problem)
    return value


def _refuse_constant(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not JSON; send finite numbers")
