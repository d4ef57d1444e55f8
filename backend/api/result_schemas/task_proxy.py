"""Typed answer of GET /jobs/{id}/fidelity/task: does the cheap proxy (per-sample divergence) predict the task?
(issue 30; the stored document is made by worker/engine/tasks/proxy.py, the points are read from the
per-sample rows). Null numbers follow the non-finite rule of result_schemas/common.py."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field

from backend.api.result_schemas.common import ResultModel


class DisagreementOut(ResultModel):
    sample_index: int
    proxy: float | None = Field(
        default=None, description="The sample's proxy value (KL in nats, or SQNR in dB; null: SQNR +∞)."
    )
    value: float | None = Field(
        default=None, description="The sample's task value, in the metric's own unit."
    )
    divergence_rank: float = Field(description="Rank of its divergence among the samples kept (1 = least).")
    loss_rank: float = Field(description="Rank of its task loss among the samples kept (1 = least loss).")
    rank_gap: float = Field(
        description="loss_rank − divergence_rank: positive, the task lost more than the divergence suggests "
        "(hidden damage); negative, the outputs diverged more than the task minded."
    )


class TaskMetricProxyOut(ResultModel):
    metric: str = Field(
        description="A per-sample task metric (e.g. iou_vs_golden, wer_vs_golden, wer_delta)."
    )
    higher_is_better: bool = Field(
        description="True for IoU, agreement, F1 (the loss is its negation); false for WER, CER, a delta."
    )
    n: int = Field(description="Samples where both the proxy and the task value are defined.")
    n_excluded: int = Field(default=0, description="Samples left out: proxy or task value undefined.")
    n_exact: int = Field(
        default=0, description="Samples with identical outputs (SQNR +∞), kept as the least divergent."
    )
    spearman_rho: float | None = Field(
        default=None,
        description="Spearman's rank correlation of divergence with task loss: positive = the more the outputs "
        "diverge, the more the task loses (the proxy predicts it); null when undefined (see `undefined`).",
    )
    p_value: float | None = Field(
        default=None, description="Two-sided p-value of rho (scipy.stats.spearmanr)."
    )
    undefined: str | None = Field(default=None, description="Why rho is null (too few samples, a constant).")
    disagreements: list[DisagreementOut] = Field(
        default_factory=list, description="The samples whose two ranks differ most, largest |rank_gap| first."
    )


class ProxyPointOut(ResultModel):
    sample_index: int
    proxy: float | None = Field(description="KL in nats, or SQNR in dB; null when undefined or SQNR +∞.")
    proxy_infinite: bool = Field(default=False, description="True when the outputs are identical (SQNR +∞).")
    values: dict[str, float | None] = Field(description="Task metric → the sample's value (null: undefined).")


class TaskProxyOut(ResultModel):
    job_id: uuid.UUID
    task: str = Field(description="The job's task (segmentation, ctc...).")
    task_output: str = Field(description="The output the task decodes.")
    proxy: Literal["kl", "sqnr_db"] = Field(
        description="The per-sample proxy: KL(P‖Q) for a classification output (higher = more divergent), "
        "otherwise SQNR in dB (higher = closer: it enters the correlation negated)."
    )
    proxy_output: str = Field(
        description="The output whose per-sample table gives the proxy (the primary one)."
    )
    n_samples: int
    metrics: list[TaskMetricProxyOut] = Field(default_factory=list)
    points: list[ProxyPointOut] = Field(
        default_factory=list,
        description="One scatter point per sample: every sample up to `max_points`, else every `stride`-th "
        "sample by index.",
    )
    stride: int = Field(default=1, description="1: every sample is a point; k: every k-th sample by index.")
