"""Typed responses of the "why it diverges" routes (backend/api/routes/diagnostics.py): per-class damage
and sequence fidelity of a fidelity job, as the worker stores them (worker/engine/tasks/classification.py,
worker/engine/metrics/sequence.py). Null numbers follow the non-finite rule of
backend/api/result_schemas/common.py: undefined (no samples, or no labels for accuracies)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field

from backend.api.result_schemas.common import ResultModel


class ClassDamageOut(ResultModel):
    class_index: int
    n: int = Field(description="Samples of this class (by label, or by golden predicted class: see `by`).")
    kl_mean_nats: float | None = Field(
        default=None, description="Mean KL(P‖Q) over the class; lower is better."
    )
    top1_agreement: float | None = Field(default=None, description="Share of the class both models agree on.")
    golden_accuracy: float | None = Field(default=None, description="Null without labels.")
    compressed_accuracy: float | None = None
    accuracy_drop_pp: float | None = Field(
        default=None, description="Golden minus compressed accuracy, in percentage points; higher is worse."
    )
    confident_flips: int = 0


class ConfusionOut(ResultModel):
    rows: str = Field(default="golden predicted class")
    columns: str = Field(default="compressed predicted class")
    cells: list[list[int]] = Field(
        default_factory=list,
        description="Non-zero cells as [golden class, compressed class, samples]; off-diagonal cells are flips.",
    )


class ConfidentFlipOut(ResultModel):
    index: int = Field(description="Sample index in the dataset (filter the per-sample table with it).")
    label: int | None = Field(default=None, description="Null when the dataset has no labels.")
    golden_class: int
    golden_probability: float
    compressed_class: int
    compressed_probability: float


class ConfidentFlipsOut(ResultModel):
    count: int = 0
    stored: int = 0
    capped: bool = Field(default=False, description="True when more flips exist than are listed (1000).")
    items: list[ConfidentFlipOut] = Field(default_factory=list)


class ClassScoresRowOut(ResultModel):
    class_index: int
    support: int = Field(description="Samples whose truth is this class.")
    precision: float
    recall: float
    f1: float


class ClassificationScoresOut(ResultModel):
    n_samples: int = 0
    accuracy: float | None = None
    precision_macro: float | None = None
    recall_macro: float | None = None
    f1_macro: float | None = None
    precision_weighted: float | None = None
    recall_weighted: float | None = None
    f1_weighted: float | None = None
    per_class: list[ClassScoresRowOut] = Field(
        default_factory=list,
        description="Classes that occur as truth or prediction (scikit-learn's rule, zero_division=0).",
    )


class ScoreDeltaOut(ResultModel):
    accuracy: float | None = None
    precision_macro: float | None = None
    recall_macro: float | None = None
    f1_macro: float | None = None
    f1_weighted: float | None = None


class AgainstLabelsOut(ResultModel):
    golden: ClassificationScoresOut
    compressed: ClassificationScoresOut
    delta: ScoreDeltaOut = Field(
        default_factory=ScoreDeltaOut,
        description="Compressed minus golden; negative: the compressed model does worse.",
    )


class BorderlineOut(ResultModel):
    fraction: float = 0.1
    n: int = 0
    margin_max: float | None = Field(
        default=None, description="Largest golden top-1 minus top-2 probability inside the borderline set."
    )
    top1_agreement: float | None = Field(
        default=None, description="Top-1 agreement on the borderline samples."
    )
    top1_agreement_rest: float | None = Field(
        default=None, description="Top-1 agreement on the other samples."
    )


class ClassificationTaskOut(ResultModel):
    name: Literal["classification"] = "classification"
    against_labels: AgainstLabelsOut | None = Field(
        default=None, description="Each model scored against the dataset's labels; null without labels."
    )
    against_golden: ClassificationScoresOut | None = Field(
        default=None,
        description="Label-free: the compressed model scored with the golden model's predictions as the truth.",
    )
    borderline: BorderlineOut = Field(
        default_factory=BorderlineOut,
        description="Top-1 agreement on the golden model's lowest-margin decile, where compression flips first.",
    )


class OutputClassesOut(ResultModel):
    by: Literal["label", "golden_prediction"] | None = Field(
        default=None,
        description="How samples are grouped into classes: by their label, or by the golden model's prediction "
        "when the dataset has no labels.",
    )
    num_classes: int = 0
    n_samples: int = 0
    flip_confidence: float | None = None
    classes: list[ClassDamageOut] = Field(
        default_factory=list, description="Classes that have samples, most damaged first."
    )
    confusion: ConfusionOut = Field(default_factory=ConfusionOut)
    confident_flips: ConfidentFlipsOut = Field(default_factory=ConfidentFlipsOut)
    task: ClassificationTaskOut | None = Field(
        default=None,
        description="Task scores: precision, recall and F1 (per class, macro, weighted), against labels and "
        "against the golden model, and agreement on borderline samples. Null for jobs run before they existed.",
    )


class FidelityClassesOut(ResultModel):
    job_id: uuid.UUID
    primary_output: str = ""
    outputs: dict[str, OutputClassesOut] = Field(
        default_factory=dict, description="Per classification output (golden name): its per-class damage."
    )


class PercentilesOut(ResultModel):
    p1: float | None = None
    p5: float | None = None
    p25: float | None = None
    p50: float | None = None
    p75: float | None = None
    p95: float | None = None
    p99: float | None = None


class TokenStatOut(ResultModel):
    mean: float | None = None
    min: float | None = None
    percentiles: PercentilesOut = Field(
        default_factory=PercentilesOut,
        description="From a fixed histogram: within one bin (cosine: 1.2 % of 1 − cos; SQNR: 0.02 dB).",
    )


class TokenSqnrOut(TokenStatOut):
    n_exact: int = Field(default=0, description="Tokens with zero error (+∞ dB), left out of the statistics.")


class PooledOut(ResultModel):
    pooling: Literal["mean", "first"] = "mean"
    cosine_mean: float | None = None
    cosine_min: float | None = None
    neighbour_top1_agreement: float | None = Field(
        default=None, description="Share of samples whose nearest other sample is the same in both models."
    )
    neighbour_k: int = 0
    neighbour_topk_overlap: float | None = Field(
        default=None, description="Mean |kNN golden ∩ kNN compressed| / k within the evaluated set."
    )
    neighbour_metric: str = "cosine"


class OutputSequenceOut(ResultModel):
    n_samples: int = 0
    n_tokens: int = Field(default=0, description="Tokens compared (those the attention mask keeps).")
    masked: bool = Field(default=False, description="True when the dataset's attention_mask selected tokens.")
    token_cosine: TokenStatOut = Field(default_factory=TokenStatOut)
    token_sqnr_db: TokenSqnrOut = Field(default_factory=TokenSqnrOut)
    pooled: PooledOut = Field(default_factory=PooledOut)


class FidelitySequenceOut(ResultModel):
    job_id: uuid.UUID
    outputs: dict[str, OutputSequenceOut] = Field(
        default_factory=dict,
        description="Per output shaped (N, T, D) (golden name): token and pooled fidelity.",
    )
