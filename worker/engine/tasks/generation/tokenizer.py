"""The tokenizer a generation is decoded with: the Hugging Face `tokenizer.json` inside a zipped ONNX model
(where the exporters leave it, beside model.onnx), read with the `tokenizers` library. Without one, a text is
its token ids joined by spaces, which BLEU, chrF and ROUGE-L score as words."""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from worker.engine.errors import ModelLoadError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

TOKENIZER_FILE = "tokenizer.json"
IDS_JOINED = "token ids joined by spaces"


def tokenizer_member(archive: zipfile.ZipFile) -> str | None:
    """The zip's one tokenizer.json (any folder), None without one; several are refused."""
    found = [
        name
        for name in archive.namelist()
        if PurePosixPath(name).name == TOKENIZER_FILE and not name.startswith("__MACOSX/")
    ]
    if len(found) > 1:
        raise ModelLoadError(
            f"the model's zip holds {len(found)} tokenizer.json files ({', '.join(found)}); keep one"
        )
    return found[0] if found else None


def read_tokenizer(path: Path) -> tuple[Tokenizer, str] | None:
    """The tokenizer inside the zip at `path` and its member name, or None when it has none. An unreadable one
    raises ModelLoadError with the library's words."""
    from tokenizers import Tokenizer

    try:
        with zipfile.ZipFile(path) as archive:
            member = tokenizer_member(archive)
            if member is None:
                return None
            text = archive.read(member).decode("utf-8")
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"could not read the tokenizer.json of {path.name}: {exc}") from exc
    try:
        return Tokenizer.from_str(text), member
    except Exception as exc:  # the Rust library raises its own Exception subclass
        raise ModelLoadError(
            f"{member} in {path.name} is not a tokenizer the tokenizers library reads: {exc}"
        ) from exc


def tokenizer_facts(path: Path) -> dict[str, Any] | None:
    """What a model inspection records of the tokenizer in a zipped model: {"member", "vocab_size"}, or
    {"member": None, "error"} when it cannot be read; None when the zip has none."""
    try:
        found = read_tokenizer(path)
    except ModelLoadError as exc:
        return {"member": None, "vocab_size": None, "error": str(exc)}
    if found is None:
        return None
    tokenizer, member = found
    return {"member": member, "vocab_size": tokenizer.get_vocab_size(with_added_tokens=True), "error": None}


class TextDecoder:
    """Token ids → text: with the tokenizer (special tokens skipped), or the ids joined by spaces."""

    def __init__(self, tokenizer: Tokenizer | None = None, source: str = "") -> None:
        self.tokenizer = tokenizer
        self.decoded_with = f"tokenizer.json ({source})" if tokenizer is not None else IDS_JOINED

    def __call__(self, ids: Iterable[Any]) -> str:
        values = [int(i) for i in ids]
        if self.tokenizer is None:
            return " ".join(map(str, values))
        return str(self.tokenizer.decode(values, skip_special_tokens=True))
