"""The text readers (issue 31): a JSONL of prompts and a plain-text corpus are checked at upload with their
line number in the refusal, described as strings (never tokenized by the API), and turned into arrays only
by the job's tokenizing callback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dataset_readers.archives import ArchiveLimits
from dataset_readers.errors import DatasetFormatError
from dataset_readers.interface import ReadOptions
from dataset_readers.registry import reader_for
from dataset_readers.text.parse import MAX_LINE_BYTES, TextRecords

LIMITS = ArchiveLimits()


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _jsonl(tmp_path: Path, *lines: str) -> Path:
    return _write(tmp_path, "prompts.jsonl", "\n".join(lines).encode())


def _refusal(path: Path, kind: str = "prompts_jsonl") -> str:
    with pytest.raises(DatasetFormatError) as caught:
        reader_for(kind).describe(path, LIMITS, ReadOptions())
    return caught.value.message


def test_a_jsonl_of_prompts_is_described_as_strings_and_tokenized_by_the_callback(tmp_path: Path) -> None:
    rows = [
        {"prompt": "Hello", "reference": " world", "id": 1},
        {"prompt": "Zürich ist", "reference": " schön"},
    ]
    path = _jsonl(tmp_path, *(json.dumps(r, ensure_ascii=False) for r in rows), "", "")  # blank lines skipped
    description = reader_for("prompts_jsonl").describe(path, LIMITS, ReadOptions())
    assert description.n_samples == 2
    assert description.arrays_json() == {
        "prompt": {"shape": [2], "dtype": "str"},
        "reference": {"shape": [2], "dtype": "str"},
    }
    seen: list[TextRecords] = []

    def tokenize(records: TextRecords) -> dict[str, np.ndarray]:
        seen.append(records)
        return {"input_ids": np.arange(len(records.prompts))[:, None]}

    arrays = reader_for("prompts_jsonl").arrays(path, LIMITS, ReadOptions(tokenize=tokenize), limit=1)
    assert seen == [TextRecords(["Hello"], [" world"])]  # only the first `limit` prompts are tokenized
    assert arrays["input_ids"].shape == (1, 1)
    with pytest.raises(DatasetFormatError, match="tokenized at job time"):
        reader_for("prompts_jsonl").arrays(path, LIMITS, ReadOptions())  # a job without a tokenizer


def test_a_corpus_is_one_document_cut_by_the_callback(tmp_path: Path) -> None:
    path = _write(tmp_path, "corpus.txt", "\ufeffFirst line.\r\nSecond line.\n".encode())
    description = reader_for("text_corpus").describe(path, LIMITS, ReadOptions())
    assert description.n_samples == 1 and description.arrays_json() == {
        "text": {"shape": [1], "dtype": "str"}
    }

    def windows(records: TextRecords) -> dict[str, np.ndarray]:
        assert records.corpus == "First line.\nSecond line.\n"  # BOM and CR dropped, lines kept
        return {"input_ids": np.zeros((3, 4), dtype=np.int64)}

    arrays = reader_for("text_corpus").arrays(path, LIMITS, ReadOptions(tokenize=windows), limit=2)
    assert arrays["input_ids"].shape == (2, 4)  # the limit cuts the windows


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        (['{"prompt": "a"}', '{"prompt": "b",}'], "line 2 is not valid JSON"),
        (['["a list"]'], "line 1 is a JSON list, not an object"),
        (['{"prompt": "a"}', '{"text": "b"}'], "line 2 has no \"prompt\" (its keys: 'text')"),
        (['{"prompt": 3}'], 'line 1: "prompt" is a int, not a string'),
        (['{"prompt": "  "}'], 'line 1: "prompt" is empty'),
        (['{"prompt": "a", "reference": ["x"]}'], 'line 1: "reference" is a list'),
        (['{"prompt": "a", "reference": "x"}', '{"prompt": "b"}'], "prompt 2 has none"),
    ],
)
def test_bad_jsonl_lines_are_refused_with_their_line_number(
    tmp_path: Path, lines: list[str], words: str
) -> None:
    assert words in _refusal(_jsonl(tmp_path, *lines))


def test_empty_non_utf8_and_oversized_files_are_refused(tmp_path: Path) -> None:
    assert "the file is empty (0 bytes)" in _refusal(_write(tmp_path, "a.jsonl", b""))
    assert "only blank space" in _refusal(_write(tmp_path, "b.jsonl", b"\n  \n"))
    assert "the file is empty" in _refusal(_write(tmp_path, "c.txt", b""), "text_corpus")
    latin1 = '{"prompt": "ok"}\n{"prompt": "café"}'.encode("latin-1")
    message = _refusal(_write(tmp_path, "d.jsonl", latin1))
    assert "line 2 is not UTF-8 (byte 16 of the line is 0xe9)" in message
    assert "line 1 is not UTF-8" in _refusal(_write(tmp_path, "e.txt", b"\xff\xfe abc"), "text_corpus")
    long_line = b"x" * (MAX_LINE_BYTES + 1)
    message = _refusal(_write(tmp_path, "f.txt", b"short\n" + long_line), "text_corpus")
    assert f"line 2 is {MAX_LINE_BYTES + 1} bytes" in message
    too_long = b'{"prompt": "' + b"y" * MAX_LINE_BYTES + b'"}'
    assert "line 1 is" in _refusal(_write(tmp_path, "g.jsonl", too_long))
