"""Receive a multipart upload straight into the artifact store's staging area.

Starlette's form parsing spools each file to a temporary file before the route runs; for model files of
several GB that is a second full write. Here the request body is parsed as it streams (python-multipart's
incremental parser) and the file part goes directly to the staging file, hashed and size-checked on the way.
Small form fields are kept in memory (capped).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from backend.errors import InvalidUpload, UploadTooLarge
from backend.storage import StagedFile

MAX_FIELD_BYTES = 64 * 1024
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
    parser = MultipartParser(boundary, _callbacks(state))  # type: ignore[arg-type]
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise InvalidUpload(
            f"the multipart body is malformed ({exc}); send the file with curl -F file=@PATH"
        ) from exc
    finally:
        if state.out is not None:
            state.out.close()
    if state.out is None:
        raise InvalidUpload(
            "no file in the upload: send it in the multipart field 'file' (curl -F file=@model.onnx)"
        )
    staged = StagedFile(path=staging, sha256=state.digest.hexdigest(), size_bytes=state.size)
    return staged, state.filename or "upload", state.fields


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
    """An optional text field, stripped; refuses one longer than max_length."""
    value = fields.get(name, "").strip()
    if len(value) > max_length:
        raise InvalidUpload(f"{name} is longer than {max_length} characters")
    return value or None
