"""Recognise an uploaded model file without loading it, and refuse what must not be loaded.

Runs in the API process, so it uses only the standard library: ONNX files are checked by walking the
protobuf wire format of the top-level ModelProto (a truncated or non-ONNX file fails here, before any
runtime sees it); PyTorch files are zip archives whose member names tell a torch.export program, a
TorchScript archive and a plain ``torch.save`` pickle apart. Pickles are refused, never opened.
The worker's full load remains the final word: a file that passes here but fails to load is marked invalid.
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Literal

from backend.archive_limits import archive_limits
from backend.errors import InvalidUpload
from dataset_readers.archives import ArchiveLimits, check_archive, unreadable_zip
from dataset_readers.errors import DatasetFormatError

log = logging.getLogger(__name__)

ModelFormat = Literal["onnx", "onnx_zip", "torch_export", "torchscript"]

HOW_TO_EXPORT = (
    "Kneeboard never unpickles uploads, because unpickling runs arbitrary code. Export the model instead: "
    "torch.export.save(torch.export.export(model, (example,)), 'model.pt2'), "
    "or torch.jit.save(torch.jit.script(model), 'model.pt'), "
    "or torch.onnx.export(model, (example,), 'model.onnx')."
)

PICKLE_PROTOCOL_MARK = 0x80
ZIP_MAGIC = b"PK\x03\x04"

# ModelProto fields (onnx.proto): 1 ir_version, 7 graph, 8 opset_import.
_ONNX_IR_VERSION, _ONNX_GRAPH, _ONNX_OPSET = 1, 7, 8
_MAX_VARINT_BYTES = 10


class _WireError(Exception):
    pass


def _read_varint(stream: BinaryIO) -> int | None:
    """Read a protobuf varint; None at a clean end of stream."""
    result = 0
    for i in range(_MAX_VARINT_BYTES):
        byte = stream.read(1)
        if not byte:
            if i == 0:
                return None
            raise _WireError("the file ends in the middle of a field (truncated?)")
        result |= (byte[0] & 0x7F) << (7 * i)
        if not byte[0] & 0x80:
            return result
    raise _WireError("malformed varint")


def _skip(stream: BinaryIO, n: int, remaining: int) -> None:
    if n > remaining:
        raise _WireError(f"a field claims {n} bytes but only {remaining} remain (the file is truncated)")
    stream.seek(n, 1)


def protobuf_top_level_fields(stream: BinaryIO, size: int) -> dict[int, int]:
    """Walk the top-level fields of a protobuf message; return {field number: occurrences}.

    Raises _WireError when the bytes are not a well-formed message, which is how a text file, an
    unrelated binary or a truncated ONNX file is recognised without reading it into memory.
    """
    seen: dict[int, int] = {}
    while True:
        tag = _read_varint(stream)
        if tag is None:
            return seen
        field, wire_type = tag >> 3, tag & 7
        if field == 0:
            raise _WireError("field number 0 is invalid")
        remaining = size - stream.tell()
        if wire_type == 0:
            if _read_varint(stream) is None:
                raise _WireError("the file ends in the middle of a field (truncated?)")
        elif wire_type == 1:
            _skip(stream, 8, remaining)
        elif wire_type == 2:
            length = _read_varint(stream)
            if length is None:
                raise _WireError("the file ends in the middle of a field (truncated?)")
            _skip(stream, length, size - stream.tell())
        elif wire_type == 5:
            _skip(stream, 4, remaining)
        else:
            raise _WireError(f"wire type {wire_type} does not occur in ONNX files")
        seen[field] = seen.get(field, 0) + 1


def check_onnx_stream(stream: BinaryIO, size: int, what: str = "file") -> None:
    if size == 0:
        raise InvalidUpload(f"the {what} is empty (0 bytes): upload the .onnx file again")
    try:
        fields = protobuf_top_level_fields(stream, size)
    except _WireError as exc:
        # The protobuf detail ("wire type 4 ...") means nothing to most users: it goes to the log only.
        log.info("upload refused: the %s is not an ONNX protobuf message: %s", what, exc)
        if "truncated" in str(exc):
            raise InvalidUpload(
                f"the {what} is not a complete ONNX model: it ends early (truncated?). Upload it again, or "
                "check that the file written by torch.onnx.export or onnx.save was copied whole."
            ) from exc
        raise InvalidUpload(
            f"the {what} is not a valid ONNX model: its contents are not an ONNX model. Check that it is the "
            ".onnx file written by torch.onnx.export or onnx.save (not another file renamed to .onnx) and that "
            "it was copied whole; if the upload was cut short, upload it again."
        ) from exc
    missing = [
        name
        for name, field in (
            ("ir_version", _ONNX_IR_VERSION),
            ("graph", _ONNX_GRAPH),
            ("opset_import", _ONNX_OPSET),
        )
        if field not in fields
    ]
    if missing:
        raise InvalidUpload(
            f"the {what} is not a complete ONNX model: it has no {', '.join(missing)}. "
            "Upload the file written by torch.onnx.export or onnx.save; if the upload was cut short, upload it again."
        )


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise InvalidUpload(
            f"the file starts like a zip archive but is not a complete one ({exc}); upload it again"
        ) from exc


def _check_onnx_zip(zf: zipfile.ZipFile, names: list[str]) -> None:
    onnx_members = [n for n in names if n.lower().endswith(".onnx")]
    if len(onnx_members) != 1:
        raise InvalidUpload(
            f"a zipped ONNX model must hold exactly one .onnx file (plus its external data); this one holds "
            f"{len(onnx_members)}: {onnx_members[:5]}"
        )
    info = zf.getinfo(onnx_members[0])
    with zf.open(info) as member:
        check_onnx_stream(member, info.file_size, what=f"zip member {onnx_members[0]!r}")  # type: ignore[arg-type]


def _torch_zip_format(names: list[str]) -> ModelFormat | None:
    tails = {n.split("/", 1)[1] if "/" in n else n for n in names}
    if "archive_format" in tails or any(t.startswith("models/") and t.endswith(".json") for t in tails):
        return "torch_export"
    if any(t.startswith("code/") for t in tails) and "constants.pkl" in tails:
        return "torchscript"
    return None


def _zip_model_format(path: Path, limits: ArchiveLimits) -> ModelFormat:
    """Every zip (a zipped ONNX model, a torch.export or TorchScript archive) is checked against the archive
    limits first: the worker extracts or loads all of it."""
    with _open_zip(path) as zf:
        check_archive(zf, "the zip archive", path.stat().st_size, limits)
        names = zf.namelist()
        torch_format = _torch_zip_format(names)
        if torch_format:
            return torch_format
        if any(n.lower().endswith(".onnx") for n in names):
            _check_onnx_zip(zf, names)
            return "onnx_zip"
    if any(n.endswith("data.pkl") for n in names):
        raise InvalidUpload(f"this is a torch.save() pickle (a module or a state_dict). {HOW_TO_EXPORT}")
    raise InvalidUpload(
        "this zip archive is neither a PyTorch export (.pt2), a TorchScript archive (.pt) nor a zipped "
        "ONNX model with external data"
    )


@contextmanager
def _archive_refusals_as_invalid_upload() -> Iterator[None]:
    """The archive rules (dataset_readers.archives) speak DatasetFormatError; an upload refuses with
    InvalidUpload, in the same words."""
    try:
        yield
    except DatasetFormatError as exc:
        raise InvalidUpload(exc.message) from exc


def detect_model_format(path: Path, filename: str, limits: ArchiveLimits | None = None) -> ModelFormat:
    """Return the format of an uploaded model file, or raise InvalidUpload saying what to do. A zip is held
    to `limits` (default: those of the process's settings)."""
    size = path.stat().st_size
    if size == 0:
        raise InvalidUpload("the file is empty (0 bytes): choose the model file again and re-upload it")
    suffix = Path(filename).suffix.lower()
    with path.open("rb") as f:
        head = f.read(4)
    if head[:1] == bytes([PICKLE_PROTOCOL_MARK]) or suffix in (".pkl", ".pickle"):
        raise InvalidUpload(f"this is a pickled Python object. {HOW_TO_EXPORT}")
    if head == ZIP_MAGIC:
        with (
            _archive_refusals_as_invalid_upload(),
            unreadable_zip("the file", "if the upload was cut short, upload it again"),
        ):
            return _zip_model_format(path, limits or archive_limits())
    if suffix in (".pt", ".pt2", ".pth"):
        raise InvalidUpload(
            f"a {suffix} file must be a zip archive written by torch.export.save or torch.jit.save; this one "
            f"is not. {HOW_TO_EXPORT}"
        )
    if suffix != ".onnx":
        raise InvalidUpload(
            f"unsupported model file {filename!r}: upload .onnx, a .zip of an ONNX model with external data, "
            ".pt2 (torch.export) or .pt (TorchScript)"
        )
    with path.open("rb") as f:
        check_onnx_stream(f, size)
    return "onnx"
