"""Models and datasets of a project (uploaded, or made by a job)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, Field

from backend.api.recovery_schemas import RecoveryLineageOut
from backend.api.schemas.annotations import Annotations
from backend.api.schemas.common import ORMModel, UTCDateTime


class ModelOut(ORMModel, Annotations):
    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    filename: str
    format: str
    artifact_sha256: str
    size_bytes: int
    status: str = Field(description="inspecting, ready or invalid")
    error: str | None = Field(description="Why the model is invalid (the loader's message).")
    declared_input_shapes: dict[str, list[int]] | None
    inspection: dict[str, Any] | None = Field(
        description="Inputs, outputs, layers (type, parameters, MACs), totals. Filled by the inspect job."
    )
    created_at: UTCDateTime
    lineage: RecoveryLineageOut | None = Field(
        default=None,
        description="Where a model made by a job comes from (a recovery job: parent model, configuration, "
        "methods, dataset, job); null for uploads.",
    )
    duplicate_of: uuid.UUID | None = Field(
        default=None,
        description="Set (to this model's id) when an upload was the same file (sha256) with the same input "
        "shapes as this existing model of the project: the answer (200, not 201) is that model and nothing new "
        "was stored.",
    )


class ArrayOut(BaseModel):
    shape: list[int]
    dtype: str


class DatasetOut(ORMModel, Annotations):
    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    filename: str
    kind: str
    artifact_sha256: str
    size_bytes: int
    n_samples: int
    arrays: dict[str, ArrayOut]
    has_labels: bool
    preprocessing: dict[str, Any] | None
    created_at: UTCDateTime
    duplicate_of: uuid.UUID | None = Field(
        default=None,
        description="Set (to this dataset's id) when an upload was the same file (sha256) with the same "
        "preprocessing as this existing dataset of the project: the answer (200, not 201) is that dataset and "
        "nothing new was stored.",
    )
