"""The fidelity job's text-dataset step (issue 31): a JSONL of prompts or a plain-text corpus is tokenized
when the job reads it, with the tokenizer.json inside the golden model's zip, within the context the task
option `context_tokens` or the model's fixed sequence length sets (`worker.engine.tasks.generation.
text_dataset`). The launch check refuses a text dataset whose golden model has no tokenizer, so the errors
here are for what only the files show (a tokenizer that cannot be read, a model of another vocabulary)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from backend.contracts import FidelityJobParams
from dataset_readers.text.parse import TextRecords
from dataset_readers.text.reader import TEXT_KINDS
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.types import ModelFormat, Runner, TensorSpec


def _fixed(dim: object) -> int | None:
    return dim if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else None


class TaskParams(Protocol):
    """What tokenizing reads of a job's params: a fidelity job's or a sweep's task and its options."""

    @property
    def task(self) -> str: ...

    @property
    def task_options(self) -> Mapping[str, Any]: ...


class ModelSpecs(Protocol):
    """The golden model's declared inputs and outputs: a runner's, or a compressible model's (a sweep)."""

    @property
    def inputs(self) -> list[TensorSpec]: ...

    @property
    def outputs(self) -> list[TensorSpec]: ...


@dataclass
class TextTokenizing:
    """The callback the text readers call (`ReadOptions.tokenize`); what it did is kept in `notes`."""

    params: TaskParams
    golden_file: tuple[Path, ModelFormat]
    golden: ModelSpecs
    notes: list[str] = field(default_factory=list)

    def __call__(self, records: TextRecords) -> dict[str, np.ndarray]:
        from worker.engine.tasks.generation.text_dataset import (
            ContextLimit,
            tokenize_corpus,
            tokenize_prompts,
        )
        from worker.engine.tasks.generation.tokenizer import read_tokenizer

        options: dict[str, Any] = dict(self.params.task_options)
        if self.params.task != "language_model":
            raise DatasetMismatchError(
                f"a text dataset is tokenized for task 'language_model' only; this job's task is {self.params.task!r}"
            )
        path, fmt = self.golden_file
        found = read_tokenizer(path) if fmt == "onnx_zip" else None
        if found is None:
            raise DatasetMismatchError(
                "a text dataset is tokenized with the tokenizer.json inside the golden model's zip, and the golden "
                "model has none: upload it zipped with its tokenizer.json"
            )
        tokenizer, member = found
        key = str(options.get("input_ids", "input_ids"))
        spec = next((s for s in self.golden.inputs if s.name == key), None)
        fixed = _fixed(spec.shape[1]) if spec is not None and len(spec.shape) == 2 else None
        wanted = options.get("context_tokens")
        if wanted is not None and fixed is not None and wanted > fixed:
            raise DatasetMismatchError(
                f"task option 'context_tokens' is {wanted}, but the golden model's {key!r} is fixed at {fixed} tokens"
            )
        limit = ContextLimit(
            tokens=wanted if wanted is not None else fixed,
            new_tokens=int(options.get("generate_tokens") or 0),
            overflow=options.get("context_overflow", "truncate_left"),
            fixed_length=fixed,
        )
        _check_vocabulary(tokenizer.get_vocab_size(with_added_tokens=True), self.golden, options)
        if records.corpus is not None:
            made = tokenize_corpus(tokenizer, records.corpus, limit)
        else:
            made = tokenize_prompts(tokenizer, records.prompts, records.references, limit)
        self.notes += [f"text tokenized at job time with {member} of the golden model", *made.notes]
        arrays = made.arrays
        if key != "input_ids":
            arrays[key] = arrays.pop("input_ids")
        return arrays


def _check_vocabulary(size: int, golden: ModelSpecs, options: dict[str, Any]) -> None:
    """A tokenizer of another vocabulary than the logits' would feed ids the model does not have."""
    wanted = options.get("output")
    outputs = [o for o in golden.outputs if (o.name == wanted if wanted else len(o.shape) == 3)]
    scores = _fixed(outputs[0].shape[-1]) if outputs else None
    if scores is not None and scores != size:
        raise OutputMismatchError(
            f"the golden model's tokenizer.json has {size} tokens but its output {outputs[0].name!r} scores "
            f"{scores}: the text would be fed as ids of another vocabulary"
        )


def text_tokenizing(
    kind: str, params: FidelityJobParams, golden_file: tuple[Path, ModelFormat], golden: Runner
) -> TextTokenizing | None:
    """The tokenizing callback for a dataset of a text kind, else None."""
    return TextTokenizing(params, golden_file, golden) if kind in TEXT_KINDS else None


def with_text_prompts(params: FidelityJobParams, tokenizing: Callable[..., Any] | None) -> FidelityJobParams:
    """A text dataset's generation continues its `prompt_ids` (the prompt without the reference) unless the
    options name another array."""
    options = dict(params.task_options)
    if tokenizing is None or "prompt_ids" in options:
        return params
    return params.model_copy(update={"task_options": options | {"prompt_ids": "prompt_ids"}})
