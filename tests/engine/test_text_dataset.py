"""Text datasets tokenized at job time (issue 31) with a real tokenizer (all-MiniLM-L6-v2's WordPiece
tokenizer.json, which ships with padding to 128 and truncation switched on): every row's ids equal what the
`tokenizers` library gives when called directly on the same text, cut and padded as documented."""

from __future__ import annotations

import numpy as np
import pytest
from tokenizers import Tokenizer

from dataset_readers.text.reader import TEXT_KINDS as READER_KINDS
from task_specs.text import TEXT_KINDS
from tests.support.pretrained_minilm import minilm_model_dir
from worker.engine.errors import DatasetMismatchError
from worker.engine.tasks.generation.text_dataset import ContextLimit, tokenize_corpus, tokenize_prompts

PROMPTS = ["The mean of an array is", "Sort the values along", "Hello"]
REFERENCES = [" the sum divided by its count.", " the last axis by default", " world"]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))


def _direct(tokenizer: Tokenizer, text: str, special: bool) -> list[int]:
    """The library called directly, with its shipped padding and truncation switched off."""
    plain = Tokenizer.from_str(tokenizer.to_str())
    plain.no_padding()
    plain.no_truncation()
    return list(plain.encode(text, add_special_tokens=special).ids)


def _rows(ids: np.ndarray, mask: np.ndarray) -> list[list[int]]:
    assert set(np.unique(mask)) <= {0, 1}
    for row in mask:  # right padding: one block of kept tokens from position 0
        assert row.sum() == 0 or row[: row.sum()].all()
    return [row[: m.sum()].tolist() for row, m in zip(ids, mask, strict=True)]


def test_the_readers_and_the_launch_check_name_the_same_kinds() -> None:
    assert READER_KINDS == TEXT_KINDS


def test_prompts_with_references_equal_the_library_called_directly(tokenizer: Tokenizer) -> None:
    made = tokenize_prompts(tokenizer, PROMPTS, REFERENCES, ContextLimit(tokens=None))
    want = [
        _direct(tokenizer, p, True) + _direct(tokenizer, r, False)
        for p, r in zip(PROMPTS, REFERENCES, strict=True)
    ]
    arrays = made.arrays
    assert _rows(arrays["input_ids"], arrays["attention_mask"]) == want
    assert arrays["input_ids"].shape == (3, max(map(len, want))) and arrays["input_ids"].dtype == np.int64
    assert arrays["input_ids"][2, len(want[2]) :].tolist() == [0] * (
        arrays["input_ids"].shape[1] - len(want[2])
    )
    assert _rows(arrays["prompt_ids"], arrays["prompt_ids_mask"]) == [
        _direct(tokenizer, p, True) for p in PROMPTS
    ]
    assert arrays["references"].tolist() == REFERENCES and made.notes == []
    reference_lengths = [len(_direct(tokenizer, r, False)) for r in REFERENCES]
    marked = [
        row[: m.sum()].tolist()
        for row, m in zip(arrays["reference_mask"], arrays["attention_mask"], strict=True)
    ]
    assert marked == [[0] * (len(w) - n) + [1] * n for w, n in zip(want, reference_lengths, strict=True)]
    assert not (arrays["reference_mask"] & (1 - arrays["attention_mask"])).any()  # padding is never scored
    assert want[0][0] == 101 and 102 in want[0]  # [CLS] ... [SEP]: the post-processor's special tokens


def test_rows_over_the_context_keep_their_last_tokens_or_are_refused(tokenizer: Tokenizer) -> None:
    limit = ContextLimit(tokens=8, new_tokens=3, fixed_length=None)
    made = tokenize_prompts(tokenizer, PROMPTS, REFERENCES, limit)
    full = [
        _direct(tokenizer, p, True) + _direct(tokenizer, r, False)
        for p, r in zip(PROMPTS, REFERENCES, strict=True)
    ]
    assert _rows(made.arrays["input_ids"], made.arrays["attention_mask"]) == [row[-8:] for row in full]
    lengths = [len(_direct(tokenizer, r, False)) for r in REFERENCES]
    assert made.arrays["reference_mask"].sum(axis=1).tolist() == [
        min(n, len(row[-8:])) for n, row in zip(lengths, full, strict=True)
    ]
    prompts = [_direct(tokenizer, p, True) for p in PROMPTS]
    assert _rows(made.arrays["prompt_ids"], made.arrays["prompt_ids_mask"]) == [p[-5:] for p in prompts]
    over = sum(len(row) > 8 for row in full)
    assert f"{over} of 3 prompts with their references cut from the left to their last 8 tokens" in made.notes
    with pytest.raises(
        DatasetMismatchError, match=rf"{over} of 3 prompts with their references are longer than the 8"
    ):
        tokenize_prompts(tokenizer, PROMPTS, REFERENCES, ContextLimit(tokens=8, overflow="refuse"))
    with pytest.raises(DatasetMismatchError, match="generate_tokens 8 leaves no room"):
        ContextLimit(tokens=8, new_tokens=8)
    fixed = tokenize_prompts(tokenizer, PROMPTS, None, ContextLimit(tokens=16, fixed_length=16))
    assert (
        fixed.arrays["input_ids"].shape == (3, 16) and "references" not in fixed.arrays
    )  # the model's length


def test_a_corpus_is_cut_into_consecutive_windows_of_the_context(tokenizer: Tokenizer) -> None:
    text = " ".join(PROMPTS + REFERENCES) * 3
    ids = _direct(tokenizer, text, False)
    made = tokenize_corpus(tokenizer, text, ContextLimit(tokens=10, new_tokens=4))
    windows = [ids[s : s + 10] for s in range(0, len(ids), 10)]
    windows = [w for w in windows if len(w) >= 2]
    assert _rows(made.arrays["input_ids"], made.arrays["attention_mask"]) == windows
    assert _rows(made.arrays["prompt_ids"], made.arrays["prompt_ids_mask"]) == [w[-6:] for w in windows]
    assert made.notes[0].startswith(
        f"the corpus's {len(ids)} tokens cut into {len(windows)} windows of up to 10"
    )
    with pytest.raises(DatasetMismatchError, match="set the task option 'context_tokens'"):
        tokenize_corpus(tokenizer, text, ContextLimit(tokens=None))
