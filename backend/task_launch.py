"""The task mapping of a fidelity job, checked against the stored rows before it is queued: the golden
model's declared outputs (its inspection) and the dataset's arrays (its description). The rules are
`task_specs.launch_problems`, which the engine's adapters share."""

from __future__ import annotations

from typing import Any

from backend.db.models import Dataset, Model
from task_specs import Declared, launch_problems


def _declared_outputs(model: Model) -> list[Declared] | None:
    """The outputs its inspection recorded, or None when it has none (not inspected yet, or a format whose
    outputs are only known by running it)."""
    outputs = (model.inspection or {}).get("outputs")
    if not isinstance(outputs, list) or not outputs:
        return None
    return [
        Declared(str(o.get("name")), tuple(o.get("shape") or ()), str(o.get("dtype") or ""))
        for o in outputs
        if isinstance(o, dict)
    ]


def _declared_arrays(dataset: Dataset) -> dict[str, Declared]:
    arrays: dict[str, Any] = dataset.arrays or {}
    return {
        name: Declared(name, tuple(info.get("shape") or ()), str(info.get("dtype") or ""))
        for name, info in arrays.items()
        if isinstance(info, dict)
    }


def _tokenizer_size(model: Model) -> int | None:
    """The vocabulary of the tokenizer.json inside the model's zip, as its inspection read it (None: it has
    none, or was inspected before tokenizers were read)."""
    tokenizer = (model.inspection or {}).get("tokenizer")
    size = tokenizer.get("vocab_size") if isinstance(tokenizer, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) else None


def _has_tokenizer(model: Model) -> bool | None:
    """Whether the model's zip carries a readable tokenizer.json (the inspection records it; a model not
    inspected yet: None)."""
    if model.inspection is None:
        return None
    tokenizer = model.inspection.get("tokenizer")
    return isinstance(tokenizer, dict) and tokenizer.get("member") is not None


def task_mapping_problems(task: str, options: dict[str, Any], golden: Model, dataset: Dataset) -> list[str]:
    return launch_problems(
        task,
        options,
        _declared_outputs(golden),
        _declared_arrays(dataset),
        tokenizer_size=_tokenizer_size(golden),
        dataset_kind=dataset.kind,
        has_tokenizer=_has_tokenizer(golden),
    )
