"""The SQL behind GET /jobs/{id}/fidelity/task and …/task/samples (issue 30): the scatter's points (proxy and
task values of each sample, every `stride`-th sample of a large job) and the per-sample rows sorted by a task
metric, worst first. The stored document (RESULT_FIDELITY_TASK_PROXY) names the proxy and each metric's
direction; routes/task_proxy.py types the answers."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.db.models import Job, SampleDivergence
from backend.sample_order import sample_page


def scatter_points(
    session: Session, job_id: uuid.UUID, document: dict[str, Any], max_points: int
) -> tuple[int, list[dict[str, Any]]]:
    """(stride, points): each point's sample index, proxy value (None: undefined or +∞ SQNR, then
    proxy_infinite says which) and task values, for every `stride`-th sample so at most `max_points`."""
    n = int(document.get("n_samples") or 0)
    stride = max(1, math.ceil(n / max_points))
    proxy = SampleDivergence.kl if document.get("proxy") == "kl" else SampleDivergence.sqnr_db
    conditions = [SampleDivergence.job_id == job_id, SampleDivergence.output_name == document["proxy_output"]]
    if stride > 1:
        conditions.append(SampleDivergence.sample_index % stride == 0)
    rows = session.execute(
        select(
            SampleDivergence.sample_index,
            proxy,
            SampleDivergence.finite,
            SampleDivergence.mse,
            SampleDivergence.task_values,
        )
        .where(*conditions)
        .order_by(SampleDivergence.sample_index)
        .limit(max_points)
    ).tuples()
    exact_possible = document.get("proxy") != "kl"
    points = [
        {
            "sample_index": index,
            "proxy": value,
            # the table stores +∞ SQNR as NULL like NaN: an exact sample is the finite one with MSE 0
            "proxy_infinite": exact_possible and value is None and bool(finite) and mse == 0.0,
            "values": dict(values or {}),
        }
        for index, value, finite, mse, values in rows
    ]
    return stride, points


def task_sample_page(
    session: Session,
    job: Job,
    output: str,
    metric: str,
    higher_is_better: bool,
    order: Literal["worst", "best"],
    offset: int,
    limit: int,
) -> tuple[int, Sequence[SampleDivergence]]:
    """One page of the per-sample rows of `output` sorted by the task metric (worst first by default, samples
    without a value last, ties by sample index), and how many rows there are."""
    value = SampleDivergence.task_values[metric].as_float()
    ascending = higher_is_better == (order == "worst")  # worst IoU is the smallest, worst WER the largest
    ordering = value.asc().nulls_last() if ascending else value.desc().nulls_last()
    conditions = [SampleDivergence.job_id == job.id, SampleDivergence.output_name == output]
    return sample_page(
        session,
        job.id,
        job.finished_at,
        output,
        conditions,
        [ordering, SampleDivergence.sample_index],
        ("task", metric, order),
        offset,
        limit,
    )
