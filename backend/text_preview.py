"""A preview of a text dataset (issue 31): its prompts and references as the user wrote them (a JSONL line a
sample), or the start of a corpus, each string cut at `PREVIEW_CHARS` for the page. The text is parsed by its
reader (dataset_readers.text), never tokenized: the API loads no tokenizer."""

from __future__ import annotations

from pathlib import Path

from backend.dataset_preview import SamplePage, SamplePreview
from backend.errors import Conflict
from dataset_readers.errors import DatasetFormatError
from dataset_readers.text.parse import PROMPT, REFERENCE, parse_corpus, parse_jsonl

PREVIEW_CHARS = 2000
"""Characters of one string a preview shows (a prompt, a reference, the corpus's start)."""
TEXT_PREVIEW_KINDS = ("prompts_jsonl", "text_corpus")


def _cut(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"… ({len(text):,} characters)"


def preview_text(path: Path, kind: str, offset: int, limit: int) -> SamplePage:
    """Samples offset .. offset+limit-1 of a stored text dataset; a corpus is one sample, its start."""
    try:
        records = parse_corpus(path) if kind == TEXT_PREVIEW_KINDS[1] else parse_jsonl(path)
    except DatasetFormatError as exc:  # checked at upload: only a damaged store gets here
        raise Conflict(f"the stored text dataset cannot be read: {exc.message}") from exc
    if records.corpus is not None:
        items = (
            [SamplePreview(0, None, {}, False, text={"text": _cut(records.corpus)})] if offset == 0 else []
        )
        return SamplePage(1, items)
    stop = min(offset + limit, len(records.prompts))
    items = []
    for i in range(offset, stop):
        text = {PROMPT: _cut(records.prompts[i])}
        if records.references is not None:
            text[REFERENCE] = _cut(records.references[i])
        items.append(SamplePreview(i, None, {}, False, text=text))
    return SamplePage(len(records.prompts), items)
