"""The text readers behind the DatasetReader interface: the upload check (``describe``: the text is parsed and
checked, nothing is tokenized) and, for the jobs, the arrays that the caller's ``ReadOptions.tokenize`` makes of
the parsed text (the worker passes one that uses the golden model's tokenizer and context)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from dataset_readers.archives import ArchiveLimits
from dataset_readers.errors import DatasetFormatError
from dataset_readers.interface import ArrayInfo, DatasetDescription, ReadOptions
from dataset_readers.text.parse import PROMPT, REFERENCE, TextRecords, parse_corpus, parse_jsonl

TEXT = "text"
TEXT_KINDS = ("prompts_jsonl", "text_corpus")
"""The kinds whose stored file is text, tokenized at job time."""


def _tokenized(
    records: TextRecords, options: ReadOptions, limit: int | None, kind: str
) -> dict[str, np.ndarray]:
    if options.tokenize is None:
        raise DatasetFormatError(
            f"a text dataset ({kind}) is tokenized at job time with the golden model's tokenizer.json, by a "
            "fidelity job of task 'language_model'; this job reads arrays only: upload token ids as an .npz"
        )
    arrays = options.tokenize(records)
    return arrays if limit is None else {name: a[:limit] for name, a in arrays.items()}


class _TextReader:
    kind = ""
    parse: Callable[[Path], TextRecords]

    def records(self, path: Path) -> TextRecords:
        return type(self).parse(path)

    def arrays(
        self, path: Path, limits: ArchiveLimits, options: ReadOptions, limit: int | None = None
    ) -> dict[str, np.ndarray]:
        """The arrays `options.tokenize` makes of the text (its first `limit` samples when given)."""
        return _tokenized(self.records(path), options, limit, self.kind)


class PromptsJsonlReader(_TextReader):
    """One JSON object a line: "prompt" and an optional "reference" continuation."""

    kind = TEXT_KINDS[0]
    parse = staticmethod(parse_jsonl)

    def describe(self, path: Path, limits: ArchiveLimits, options: ReadOptions) -> DatasetDescription:
        """The prompts (and references) as string arrays: their token ids exist only once a job tokenizes."""
        records = parse_jsonl(path)
        n = records.n_samples
        arrays = {PROMPT: ArrayInfo((n,), "str")}
        if records.references is not None:
            arrays[REFERENCE] = ArrayInfo((n,), "str")
        return DatasetDescription(n_samples=n, arrays=arrays)

    def arrays(
        self, path: Path, limits: ArchiveLimits, options: ReadOptions, limit: int | None = None
    ) -> dict[str, np.ndarray]:
        """Only the first `limit` prompts are tokenized."""
        records = parse_jsonl(path)
        if limit is not None:
            references = None if records.references is None else records.references[:limit]
            records = replace(records, prompts=records.prompts[:limit], references=references)
        return _tokenized(records, options, None, self.kind)


class TextCorpusReader(_TextReader):
    """A plain-text corpus for perplexity, one document, cut into windows of the context at job time."""

    kind = TEXT_KINDS[1]
    parse = staticmethod(parse_corpus)

    def describe(self, path: Path, limits: ArchiveLimits, options: ReadOptions) -> DatasetDescription:
        parse_corpus(path)
        return DatasetDescription(n_samples=1, arrays={TEXT: ArrayInfo((1,), "str")})
