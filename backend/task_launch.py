"""The task mapping of a fidelity job, checked against the stored rows before it is queued: the golden
model's declared outputs (its inspection) and the dataset's arrays (its description). The rules are
`task_specs.launch_problems`, which the engine's adapters share."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from backend.db.models import Dataset, Model, ModelStatus
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


SIMILARITY_MODEL = "similarity_model_id"


def similarity_model_problems(session: Session, project_id: uuid.UUID, options: dict[str, Any]) -> list[str]:
    """The embedding model of the option `similarity_model_id` must be a valid model of the job's project
    that carries a tokenizer.json (a model of another project reads as absent, so nothing of it leaks)."""
    raw = options.get(SIMILARITY_MODEL)
    if raw is None:
        return []
    key = f"task option {SIMILARITY_MODEL!r}"
    if not options.get("generate_tokens"):
        return [f"{key} scores generated text: set generate_tokens > 0 as well"]
    try:
        model_id = uuid.UUID(str(raw))
    except ValueError:
        return [f"{key} must be the id of a model of this project, got {raw!r}"]
    model = session.get(Model, model_id)
    if model is None or model.project_id != project_id:
        return [
            f"{key}: there is no model {model_id} in this project; upload the embedding model to it first"
        ]
    if model.status == ModelStatus.invalid.value:
        return [f"{key}: the model {model.name!r} is invalid: {model.error}"]
    if _has_tokenizer(model) is False:
        return [
            f"{key}: the model {model.name!r} has no tokenizer.json to read the generated text with; upload it "
            "as a zip of its .onnx and tokenizer.json"
        ]
    return []
