"""One sample of a fidelity job, for the sample inspector (GET /jobs/{id}/samples/{index})."""

from __future__ import annotations

import uuid

from pydantic import BaseModel, Field

from backend.api.result_schemas.fidelity import ProbabilityFlags
from backend.api.schemas import SampleDivergenceOut


class TopKOut(BaseModel):
    classes: list[int] = Field(description="The k most probable classes, most probable first.")
    probabilities: list[float] = Field(
        description="Their probabilities: softmax of the logits, or the outputs renormalised when the model "
        "outputs probabilities (as the fidelity metrics took them; 7 significant digits)."
    )


class OutputTopKOut(BaseModel):
    output: str = Field(description="The golden model's output.")
    compressed_output: str
    num_classes: int | None
    outputs_are_probabilities: ProbabilityFlags
    golden: TopKOut | None = Field(description="Null when the golden output of this sample is not finite.")
    compressed: TopKOut | None = Field(description="Null when the compressed output is not finite.")


class InputArrayOut(BaseModel):
    name: str = Field(description="The dataset array ('image' for a zip of images).")
    shape: list[int] = Field(description="Shape of this one sample (the sample axis left out).")
    dtype: str
    min: float | None = Field(description="Smallest finite value (null: none, or not numeric).")
    max: float | None
    mean: float | None
    std: float | None = Field(description="Population standard deviation; null for a zip's 8-bit images.")
    nonfinite: int = Field(description="How many values are NaN or infinite.")
    thumbnail: str | None = Field(
        description="URL of a PNG of the sample (getSampleInputPng) when it is image-like: (H, W), "
        "(1|3, H, W) or (H, W, 1|3); else null."
    )


class SampleInspectionOut(BaseModel):
    job_id: uuid.UUID
    index: int
    n_samples: int
    k: int = Field(description="Classes stored per sample and model (fewer when an output has fewer).")
    label: int | None = Field(description="The sample's label, when the dataset has labels.")
    metrics: SampleDivergenceOut | None = Field(
        description="The sample's row of the per-sample table (primary output); null when it has none."
    )
    outputs: list[OutputTopKOut] = Field(description="Per classification output, both models' top-k.")
    input: list[InputArrayOut] = Field(description="The sample's input arrays; empty when unreadable.")
    input_name: str | None = Field(description="The image's file in a zip of images.")
    input_error: str | None = Field(
        description="Why the input cannot be shown (e.g. the dataset was deleted); the rest still is."
    )
