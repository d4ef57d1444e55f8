"""Launch checks of a text dataset (issue 31): a JSONL of prompts or a plain-text corpus is tokenized at job
time with the golden model's tokenizer.json, so what can be refused before a worker runs is refused here, in
words (the API stores the text's shape only; it never loads a tokenizer).

Options read here: `context_tokens` (the most tokens a row holds; default the model's fixed sequence length)
and `context_overflow` ("truncate_left", the default: a row over the context keeps its last tokens; "refuse":
the job stops before any model runs, with the count). The arrays a job will read are known by construction
(`text_arrays`), so the task's other checks run on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

TEXT_KINDS = ("prompts_jsonl", "text_corpus")
TEXT_OPTIONS = ("context_tokens", "context_overflow")
OVERFLOW = ("truncate_left", "refuse")
PROMPT_IDS = "prompt_ids"
MIN_CONTEXT = 2


class _Tensor(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> tuple[int | str | None, ...]: ...


def _fixed(dim: object) -> int | None:
    return dim if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else None


def text_arrays(
    kind: str, described: Mapping[str, Any]
) -> dict[str, tuple[tuple[int | str | None, ...], str]]:
    """(shape, dtype) of the arrays a job tokenizes a text dataset into (widths unknown until then): see
    worker/engine/tasks/generation/text_dataset.py."""
    n: int | str | None = "N" if kind == TEXT_KINDS[1] else None
    prompt = described.get("prompt")
    if prompt is not None and prompt.shape:
        n = prompt.shape[0]
    ids: tuple[tuple[int | str | None, ...], str] = ((n, None), "int64")
    arrays: dict[str, tuple[tuple[int | str | None, ...], str]] = {
        "input_ids": ids,
        "attention_mask": ids,
        PROMPT_IDS: ids,
        f"{PROMPT_IDS}_mask": ids,
    }
    if "reference" in described:
        arrays["references"] = ((n,), "str")
    return arrays


def with_text_defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    """Generation on a text dataset continues the prompts alone (`prompt_ids`) unless told otherwise."""
    return {PROMPT_IDS: PROMPT_IDS, **options}


def text_problems(
    task: str,
    kind: str | None,
    options: Mapping[str, Any],
    output: _Tensor | None,
    has_tokenizer: bool | None,
    tokenizer_size: int | None,
) -> list[str]:
    """What stops a job on a dataset of `kind` (None or "npz"...: not text) with the golden model's logits
    `output` (None: not known) and tokenizer (`has_tokenizer` None: not known yet)."""
    given = [key for key in TEXT_OPTIONS if key in options]
    if kind not in TEXT_KINDS:
        return [f"task option {key!r} applies to text datasets (.jsonl, .txt) only" for key in given]
    if task != "language_model":
        return [
            f"a text dataset ({kind}) is tokenized for task 'language_model' only; task {task!r} reads arrays: "
            "upload them as an .npz"
        ]
    problems: list[str] = []
    if has_tokenizer is False:
        problems.append(
            "the golden model has no tokenizer.json, and a text dataset is tokenized at job time with the one "
            "inside the golden model's zip: upload the model as a .zip holding its .onnx and tokenizer.json"
        )
    if options.get("tokenizer", "model") != "model":
        problems.append("task option 'tokenizer' must be 'model' with a text dataset: its text is tokenized")
    context = options.get("context_tokens")
    if context is not None and (
        isinstance(context, bool) or not isinstance(context, int) or context < MIN_CONTEXT
    ):
        problems.append(
            f"task option 'context_tokens' must be a whole number >= {MIN_CONTEXT}, got {context!r}"
        )
        context = None
    if options.get("context_overflow", OVERFLOW[0]) not in OVERFLOW:
        problems.append(
            f"task option 'context_overflow' must be 'truncate_left' or 'refuse', got {options['context_overflow']!r}"
        )
    fixed = _fixed(output.shape[1]) if output is not None and len(output.shape) == 3 else None
    vocabulary = _fixed(output.shape[-1]) if output is not None else None
    generates = bool(options.get("generate_tokens"))  # then generation_problems says it
    if (
        not generates
        and output is not None
        and tokenizer_size is not None
        and vocabulary not in (None, tokenizer_size)
    ):
        problems.append(
            f"the golden model's tokenizer.json has {tokenizer_size} tokens but output '{output.name}' scores "
            f"{vocabulary}: the text would be fed as ids of another vocabulary"
        )
    if context is not None and fixed is not None and context > fixed:
        problems.append(
            f"task option 'context_tokens' is {context}, but the golden model's sequence length is fixed at {fixed}"
        )
    limit = context if context is not None else fixed
    if kind == TEXT_KINDS[1] and limit is None:
        problems.append(
            "a plain-text corpus is cut into windows of the model's context, and the golden model declares no "
            "fixed sequence length: set the task option 'context_tokens'"
        )
    raw = options.get("generate_tokens")
    new_tokens = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
    if (
        context is not None and new_tokens is not None and new_tokens >= context
    ):  # a fixed length: generation_problems
        problems.append(
            f"generate_tokens {new_tokens} leaves no room for a prompt in a context of {context} tokens"
        )
    return problems
