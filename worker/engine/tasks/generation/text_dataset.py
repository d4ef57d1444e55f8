"""Text datasets tokenized at job time (issue 31): a JSONL of prompts (with optional reference continuations)
or a plain-text corpus becomes the token-id arrays the language-model task and generation read, with the golden
model's own tokenizer and within its context.

Arrays made (every row padded on the right with the tokenizer's pad id, 0 without one, and masked):
- `input_ids` / `attention_mask` (N, W): what the teacher-forced pass compares. A JSONL row is the prompt's
  ids (its special tokens added, as the tokenizer's post-processor says) followed by the reference's ids
  (none added: it continues the prompt); a corpus row is one window of `context` consecutive tokens (the last
  window shorter, kept when it has at least 2 tokens, so a next token to score).
- `prompt_ids` / `prompt_ids_mask` (N, P): what generation continues: the prompt alone (a corpus: the window),
  its oldest tokens cut so that the prompt and the `new_tokens` fit the context.
- `references` (N,): the reference strings, and `reference_mask` (N, W), 1 on each row's reference tokens (the
  language-model task then scores NLL and perplexity on those only), when the JSONL has them.
W is the model's fixed sequence length when it has one (every row fed at that length), else the longest row.

The context: the task option `context_tokens`, else the model's fixed sequence length; a JSONL without
either is not cut (a model whose position table is shorter then fails in its runtime, which the job reports),
a corpus cannot be windowed without it. A row over the context is cut from the left (the most recent tokens
kept, as language-model evaluation harnesses do), counted in the notes; with `context_overflow` "refuse" the
job stops before any model runs, saying how many rows are too long and the first of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from worker.engine.errors import DatasetMismatchError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

Overflow = Literal["truncate_left", "refuse"]
OVERFLOW_MODES: tuple[str, ...] = ("truncate_left", "refuse")
PROMPT_IDS = "prompt_ids"
REFERENCE_MASK = "reference_mask"
"""1 on a row's reference tokens: the language-model task's NLL and perplexity score those only."""
MIN_CORPUS_WINDOW = 2


@dataclass(frozen=True)
class ContextLimit:
    """tokens: the most tokens a row may hold (None: no limit). new_tokens: generated tokens the prompts
    leave room for. fixed_length: the model's fixed sequence length (rows padded to it), None when free."""

    tokens: int | None
    new_tokens: int = 0
    overflow: Overflow = "truncate_left"
    fixed_length: int | None = None

    def __post_init__(self) -> None:
        if self.overflow not in OVERFLOW_MODES:
            raise DatasetMismatchError(
                f"task option 'context_overflow' must be one of {', '.join(OVERFLOW_MODES)}, got {self.overflow!r}"
            )
        if self.tokens is not None and self.new_tokens >= self.tokens:
            raise DatasetMismatchError(
                f"generate_tokens {self.new_tokens} leaves no room for a prompt in a context of {self.tokens} tokens"
            )


@dataclass
class Tokenized:
    arrays: dict[str, np.ndarray]
    notes: list[str] = field(default_factory=list)


def pad_id(tokenizer: Tokenizer) -> int:
    """The tokenizer's padding id when its padding is configured, else 0 (padded positions are masked)."""
    padding = tokenizer.padding
    return int(padding["pad_id"]) if padding else 0


def unpadded(tokenizer: Tokenizer) -> Tokenizer:
    """A copy that neither pads nor truncates: exporters ship tokenizer.json files with both switched on
    (all-MiniLM-L6-v2's pads every text to 128 ids and cuts at 128 on the right), which would put padding
    ids among the tokens and cut the end of a text, where the context rule keeps the end."""
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.no_padding()
    copy.no_truncation()
    return copy


def _padded(rows: Sequence[Sequence[int]], width: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.full((len(rows), width), pad, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    return ids, mask


def _width(rows: Sequence[Sequence[int]], limit: ContextLimit) -> int:
    return limit.fixed_length if limit.fixed_length is not None else max(len(r) for r in rows)


def _cut(
    rows: list[list[int]], budget: int | None, limit: ContextLimit, what: str, unit: str
) -> tuple[list[list[int]], str | None]:
    """Rows over `budget` tokens cut from the left (or refused); the note that says how many were cut."""
    if budget is None:
        return rows, None
    over = [i for i, row in enumerate(rows) if len(row) > budget]
    if not over:
        return rows, None
    first = over[0]
    if limit.overflow == "refuse":
        raise DatasetMismatchError(
            f"{len(over)} of {len(rows)} {what} are longer than the {budget} tokens they may hold (the first, "
            f"{unit} {first + 1}, is {len(rows[first])} tokens); set context_overflow 'truncate_left' to keep "
            "their last tokens, or shorten them"
        )
    cut = [row[-budget:] if len(row) > budget else row for row in rows]
    return cut, f"{len(over)} of {len(rows)} {what} cut from the left to their last {budget} tokens"


def tokenize_prompts(
    tokenizer: Tokenizer, prompts: Sequence[str], references: Sequence[str] | None, limit: ContextLimit
) -> Tokenized:
    """The arrays of a JSONL dataset (see the module docstring)."""
    if not prompts:
        raise DatasetMismatchError("the text dataset holds no prompts")
    pad, tokenizer = pad_id(tokenizer), unpadded(tokenizer)
    prompt_rows = [list(e.ids) for e in tokenizer.encode_batch(list(prompts), add_special_tokens=True)]
    empty = [i for i, row in enumerate(prompt_rows) if not row]
    if empty:
        raise DatasetMismatchError(
            f"prompt {empty[0] + 1} is 0 tokens once tokenized ({len(empty)} such prompts): the tokenizer keeps "
            "nothing of its text"
        )
    sequences = prompt_rows
    reference_lengths = [0] * len(prompt_rows)
    if references is not None:
        reference_rows = [
            list(r.ids) for r in tokenizer.encode_batch(list(references), add_special_tokens=False)
        ]
        sequences = [p + r for p, r in zip(prompt_rows, reference_rows, strict=True)]
        reference_lengths = [len(r) for r in reference_rows]
    sequences, note = _cut(sequences, limit.tokens, limit, "prompts with their references", "line")
    budget = None if limit.tokens is None else limit.tokens - limit.new_tokens
    prompt_rows, prompt_note = _cut(
        prompt_rows, budget, limit, "prompts (room left for the new tokens)", "line"
    )
    pad = pad_id(tokenizer)
    ids, mask = _padded(sequences, _width(sequences, limit), pad)
    prompt_ids, prompt_mask = _padded(prompt_rows, max(len(r) for r in prompt_rows), pad)
    arrays = {
        "input_ids": ids,
        "attention_mask": mask,
        PROMPT_IDS: prompt_ids,
        f"{PROMPT_IDS}_mask": prompt_mask,
    }
    if references is not None:
        arrays["references"] = np.array(list(references), dtype=np.str_)
        # the reference is the end of its row (a cut takes the prompt's start first): NLL scores it alone
        marked = np.zeros_like(mask)
        for i, (row, length) in enumerate(zip(sequences, reference_lengths, strict=True)):
            marked[i, max(0, len(row) - length) : len(row)] = 1
        arrays[REFERENCE_MASK] = marked
    return Tokenized(arrays, [n for n in (note, prompt_note) if n is not None])


def tokenize_corpus(tokenizer: Tokenizer, text: str, limit: ContextLimit) -> Tokenized:
    """The arrays of a plain-text corpus: consecutive windows of the context (see the module docstring)."""
    if limit.tokens is None:
        raise DatasetMismatchError(
            "a plain-text corpus is cut into windows of the model's context, which is not known: set the task "
            "option 'context_tokens'"
        )
    pad = pad_id(tokenizer)
    ids = list(unpadded(tokenizer).encode(text, add_special_tokens=False).ids)
    windows = [ids[start : start + limit.tokens] for start in range(0, len(ids), limit.tokens)]
    dropped = len(windows[-1]) if windows and len(windows[-1]) < MIN_CORPUS_WINDOW else 0
    windows = [w for w in windows if len(w) >= MIN_CORPUS_WINDOW]
    if not windows:
        raise DatasetMismatchError(
            f"the corpus is {len(ids)} tokens once tokenized: too short for one window of at least "
            f"{MIN_CORPUS_WINDOW} tokens"
        )
    budget = limit.tokens - limit.new_tokens
    prompts = [w[-budget:] for w in windows]
    input_ids, mask = _padded(windows, _width(windows, limit), pad)
    prompt_ids, prompt_mask = _padded(prompts, max(len(p) for p in prompts), pad)
    notes = [
        f"the corpus's {len(ids)} tokens cut into {len(windows)} windows of up to {limit.tokens} tokens"
        + (f" ({dropped} last token left out: no next token to score)" if dropped else "")
    ]
    if limit.new_tokens:
        notes.append(f"generation continues each window's last {budget} tokens")
    arrays = {"input_ids": input_ids, "attention_mask": mask, PROMPT_IDS: prompt_ids}
    arrays[f"{PROMPT_IDS}_mask"] = prompt_mask
    return Tokenized(arrays, notes)
