"""What the API and the workers agree on: job kinds, their Celery task names and their parameters.

The API enqueues by task *name* (never importing worker code); workers register tasks under these names.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class JobKind(StrEnum):
    inspect = "inspect"
    fidelity = "fidelity"


TASK_NAMES: dict[JobKind, str] = {
    JobKind.inspect: "kneeboard.inspect_model",
    JobKind.fidelity: "kneeboard.fidelity",
}

# Kinds that users create through POST /jobs; "inspect" jobs are created by model uploads.
USER_JOB_KINDS = (JobKind.fidelity,)


class InspectParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model_id: uuid.UUID


class FidelityJobParams(BaseModel):
    """Compare a compressed model with its golden model on a dataset."""

    model_config = ConfigDict(extra="forbid")

    golden_model_id: uuid.UUID
    compressed_model_id: uuid.UUID
    dataset_id: uuid.UUID
    batch_size: int = Field(default=64, ge=1, le=65536, description="Samples per forward pass.")
    top_k: int = Field(default=5, ge=1, le=1000, description="k of top-k agreement and overlap.")
    threshold_kl: float = Field(
        default=0.1, ge=0, description="A sample whose KL(P‖Q) in nats exceeds this is flagged as degraded."
    )
    task: Literal["auto", "classification", "embedding", "regression"] = Field(
        default="auto", description="How outputs are compared; auto infers it from the output shape."
    )
    threads: int | None = Field(default=None, ge=1, le=256, description="Intra-op threads of the runtimes.")


PARAMS_BY_KIND: dict[JobKind, type[BaseModel]] = {
    JobKind.inspect: InspectParams,
    JobKind.fidelity: FidelityJobParams,
}

# Result keys under which workers store documents in job_results.
RESULT_FIDELITY_SUMMARY = "fidelity.summary"
