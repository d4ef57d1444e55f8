"""Checking and parsing text datasets: what an upload check refuses (a bad JSON line, a missing or empty
"prompt", an empty file, bytes that are not UTF-8, a line over `MAX_LINE_BYTES`) is said with its line number,
in the words the user needs to fix the file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dataset_readers.errors import DatasetFormatError

MAX_LINE_BYTES = 1024 * 1024
"""One line (a JSONL record, or a line of a corpus) over this many bytes is refused: a prompt of a million
bytes is some 250 k tokens, past any model's context, and usually a file that is not line-oriented at all
(a minified JSON array, a binary file)."""

PROMPT = "prompt"
REFERENCE = "reference"


@dataclass(frozen=True)
class TextRecords:
    """A text dataset as its reader parsed it: the prompts (one a sample) and their reference continuations
    (None without any) of a JSONL file, or the `corpus` of a plain-text file (then `prompts` is empty)."""

    prompts: list[str]
    references: list[str] | None = None
    corpus: str | None = None

    @property
    def n_samples(self) -> int:
        """Prompts of a JSONL file; a corpus counts as one document (its windows depend on the tokenizer)."""
        return 1 if self.corpus is not None else len(self.prompts)


def _lines(path: Path, what: str) -> list[tuple[int, str]]:
    """(line number from 1, text) of every line, after the size, encoding and emptiness checks."""
    data = path.read_bytes()
    if not data.strip():
        raise DatasetFormatError(
            f"the file is empty{' (0 bytes)' if not data else ' (only blank space)'}: {what}"
        )
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if len(raw) > MAX_LINE_BYTES:
            raise DatasetFormatError(
                f"line {number} is {len(raw)} bytes; lines are at most {MAX_LINE_BYTES} bytes (is this a "
                "line-oriented text file?)"
            )
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetFormatError(
                f"line {number} is not UTF-8 (byte {exc.start + 1} of the line is 0x{raw[exc.start]:02x}): "
                "save the file as UTF-8"
            ) from exc
        lines.append((number, text.removesuffix("\r")))
    return lines


JSONL_EXAMPLE = '{"prompt": "The capital of France is", "reference": " Paris."}'


def parse_jsonl(path: Path) -> TextRecords:
    """One JSON object a line with a non-empty string "prompt" and, on every line or on none, a string
    "reference" (the continuation the text should have); blank lines are skipped, other keys ignored."""
    prompts: list[str] = []
    references: list[str | None] = []
    for number, line in _lines(path, f"write one JSON object a line, e.g. {JSONL_EXAMPLE}"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetFormatError(
                f"line {number} is not valid JSON ({exc.msg} at column {exc.colno}); each line is one object "
                f"such as {JSONL_EXAMPLE}"
            ) from exc
        if not isinstance(record, dict):
            raise DatasetFormatError(
                f"line {number} is a JSON {type(record).__name__}, not an object such as {JSONL_EXAMPLE}"
            )
        prompt = record.get(PROMPT)
        if prompt is None:
            keys = ", ".join(map(repr, record)) or "none"
            raise DatasetFormatError(f'line {number} has no "prompt" (its keys: {keys})')
        if not isinstance(prompt, str):
            raise DatasetFormatError(f'line {number}: "prompt" is a {type(prompt).__name__}, not a string')
        if not prompt.strip():
            raise DatasetFormatError(f'line {number}: "prompt" is empty; every prompt needs some text')
        reference = record.get(REFERENCE)
        if reference is not None and not isinstance(reference, str):
            raise DatasetFormatError(
                f'line {number}: "reference" is a {type(reference).__name__}, not a string'
            )
        prompts.append(prompt)
        references.append(reference)
    with_reference = [r is not None for r in references]
    if any(with_reference) and not all(with_reference):
        first_without = with_reference.index(False) + 1
        raise DatasetFormatError(
            f'{sum(with_reference)} of {len(prompts)} prompts have a "reference" but prompt {first_without} '
            "has none: give every line a reference, or none (scores against references need one a prompt)"
        )
    kept = [r for r in references if r is not None]
    return TextRecords(prompts, kept if any(with_reference) else None)


def parse_corpus(path: Path) -> TextRecords:
    """The whole text (lines joined by "\\n"), for perplexity; it is cut into windows at job time."""
    lines = _lines(path, "a plain-text corpus needs some text")
    return TextRecords([], None, "\n".join(text for _, text in lines))
