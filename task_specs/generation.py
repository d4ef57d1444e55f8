"""Launch checks of the language-model task's generation options (issue 31, "Generated text"): a wrong value is
a 422 at launch that says what was expected, not a job that stops after its teacher-forced pass.

Options: `generate_tokens` (new tokens per prompt; 0, the default, generates nothing), `sampling` ("greedy",
the default, or "seeded"), `seed` (the draws of seeded sampling, the same for both models), `prompt_ids` (the
dataset array of prompt token ids (N, T), default the `input_ids` array; its padding is marked by
`attention_mask` for `input_ids`, by `<prompt_ids>_mask` for another array, left or right, read per row), `eos_token_id` (a generation
stops there), `tokenizer` ("model", the default: decode with the `tokenizer.json` inside the golden model's
zip when it has one; "none": token ids joined by spaces), `references` (the dataset array of reference
continuations, one string per sample; default "references" when the dataset has it), `similarity_model_id`
(a model of the job's project, zipped with its tokenizer.json, whose mean-pooled embeddings compare the two
generations by cosine: `worker/engine/tasks/generation/similarity.py`; checked at launch by
backend/task_launch.py, which can read the project's models). A text dataset's options (`context_tokens`,
`context_overflow`) are in `task_specs.text`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

GENERATION_OPTIONS = (
    "generate_tokens",
    "sampling",
    "seed",
    "prompt_ids",
    "eos_token_id",
    "tokenizer",
    "references",
    "similarity_model_id",
)
SAMPLING = ("greedy", "seeded")
TOKENIZER = ("model", "none")
REFERENCES = "references"


class _Tensor(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def shape(self) -> tuple[int | str | None, ...]: ...
    @property
    def dtype(self) -> str: ...


def _fixed(dim: object) -> int | None:
    return dim if isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0 else None


def _count(options: Mapping[str, Any], key: str, low: int) -> tuple[int | None, list[str]]:
    value = options.get(key)
    if value is None:
        return None, []
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        return None, [f"task option {key!r} must be a whole number >= {low}, got {value!r}"]
    return value, []


def _strings(dtype: str) -> bool:
    return dtype.lstrip("<>|=").startswith(("U", "S", "str", "bytes"))


def generation_problems(
    options: Mapping[str, Any],
    output: _Tensor | None,
    arrays: Mapping[str, _Tensor],
    tokenizer_size: int | None,
) -> list[str]:
    """What is wrong with the generation options, given the logits output the task reads (None: not known),
    the dataset's arrays and the golden model's tokenizer vocabulary size (None: it has no tokenizer.json,
    or it is not known)."""
    tokens, problems = _count(options, "generate_tokens", 0)
    _, found = _count(options, "seed", 0)
    eos, found_eos = _count(options, "eos_token_id", 0)
    problems += found + found_eos
    if options.get("sampling", "greedy") not in SAMPLING:
        problems.append(f"task option 'sampling' must be 'greedy' or 'seeded', got {options['sampling']!r}")
    if options.get("tokenizer", "model") not in TOKENIZER:
        problems.append(
            f"task option 'tokenizer' must be 'model' (the golden model's tokenizer.json) or 'none', got "
            f"{options['tokenizer']!r}"
        )
    if not tokens:
        return problems
    vocabulary = _fixed(output.shape[-1]) if output is not None else None
    context = _fixed(output.shape[1]) if output is not None and len(output.shape) == 3 else None
    decodes = options.get("tokenizer", "model") == "model"
    if output is not None and vocabulary is not None and decodes and tokenizer_size not in (None, vocabulary):
        problems.append(
            f"the golden model's tokenizer.json has {tokenizer_size} tokens but output '{output.name}' "
            f"scores {vocabulary}: it would decode the generated ids into the wrong text"
        )
    if eos is not None and vocabulary is not None and eos >= vocabulary:
        problems.append(
            f"task option 'eos_token_id' is {eos}; the vocabulary's ids are 0 to {vocabulary - 1}"
        )
    key = str(options.get("prompt_ids", options.get("input_ids", "input_ids")))
    prompts = arrays.get(key)
    if prompts is None:
        names = ", ".join(sorted(arrays)) or "none"
        return [
            *problems,
            f"generation reads prompts from a dataset array {key!r}, which it lacks (arrays: {names})",
        ]
    shape = tuple(prompts.shape)
    if len(shape) != 2 or (prompts.dtype and _strings(prompts.dtype)) or "float" in prompts.dtype:
        problems.append(
            f"dataset array {key!r} is {list(shape)} {prompts.dtype}; prompts are integer token ids (N, T)"
        )
    elif _fixed(shape[1]) == 0:
        problems.append(f"dataset array {key!r} holds empty prompts (0 tokens a row)")
    elif context is not None:
        width = _fixed(shape[1])
        if width is not None and width > context:
            problems.append(
                f"the prompts in {key!r} hold up to {width} tokens but the model's context is fixed at {context}"
            )
        elif tokens >= context:
            problems.append(
                f"generate_tokens {tokens} leaves no room for a prompt in the model's fixed context of {context}"
            )
    reference_key = options.get("references")
    if reference_key is not None and reference_key not in arrays:
        problems.append(f"task option 'references' names {reference_key!r}, which the dataset lacks")
    references = arrays.get(str(reference_key or REFERENCES))
    if references is not None and (len(references.shape) != 1 or not _strings(references.dtype)):
        problems.append(
            f"dataset array {references.name!r} is {list(references.shape)} {references.dtype}; reference "
            "continuations are one string per sample (numpy.array(texts))"
        )
    return problems
