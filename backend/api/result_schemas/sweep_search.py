"""A sweep's accuracy-aware search as stored (worker/jobs/sweep_search.py, worker/engine/sweep/search.py
``SearchResult.to_dict``): the steps in the order they were measured and the plan returned."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from backend.api.result_schemas.common import CompressionConfigOut, ResultModel


class SearchStepOut(ResultModel):
    """One measured step: the k most sensitive rungs at the high config, the rest at the low one."""

    k: int
    index: int = Field(description="The sweep point of this step (label search-k<k>).")
    high_layers: list[str] = Field(description="Layers at the high config (float when high is null).")
    value: float | None = Field(description="The metric measured on this step (null: undefined).")
    holds: bool = Field(description="The value meets the threshold.")
    reason: str = Field(description="Why this step was measured and what it showed.")
    seconds: float = Field(description="Time taken by the step's evaluation.")
    size_bytes: float | None = Field(default=None, description="The step's model size (weights as stored).")


class SearchRungOut(ResultModel):
    layers: list[str] = Field(description="Layers that move together (they share a tensor).")
    score: float = Field(description="The rung's sensitivity in the scan (larger: more sensitive).")


class SearchDeployedOut(ResultModel):
    """The returned plan's verdict on its exported file (the figures its frontier point stores)."""

    source: Literal["measured", "simulated"] = Field(
        description="measured: the exported file run in onnxruntime; simulated: the plan has no runnable export."
    )
    export_kind: str | None = Field(
        default=None, description="The measured file's kind, e.g. real-int8-weights."
    )
    value: float | None = Field(description="The metric on that file (null: undefined).")
    holds: bool = Field(description="The value meets the threshold.")
    note: str


class SweepSearchOut(ResultModel):
    """The smallest plan whose measured metric holds the threshold, with every step measured on the way."""

    metric: str
    threshold: float
    direction: Literal["at_least", "at_most"]
    objective: str = Field(description="What the search made smallest: size.")
    sensitivity_job_id: str = Field(description="The scan whose ranking the ladder follows.")
    low: CompressionConfigOut
    high: CompressionConfigOut | None = Field(description="null: the returned layers stay in float.")
    n: int = Field(description="Rungs on the ladder: k runs from 0 (all low) to n (all high).")
    rungs: list[SearchRungOut] = Field(description="Most sensitive first.")
    steps: list[SearchStepOut] = Field(description="In the order they were measured.")
    met: bool = Field(description="Some step held the threshold.")
    k: int | None = Field(description="The returned step (the smallest k that held); null when none held.")
    best_k: int = Field(description="The returned step, or the closest one when none held.")
    best_value: float | None
    returned_index: int = Field(description="The sweep point of best_k (exported and timed).")
    monotonic: bool = Field(
        description="False when a measured step contradicted the search's assumption that the metric "
        "improves with k (the notes say which)."
    )
    max_steps: int
    seconds: float = Field(description="The search's time, every step included.")
    plan: dict[str, str] = Field(description="Layer → config id of best_k ('float': uncompressed).")
    deployed: SearchDeployedOut | None = Field(
        default=None,
        description="best_k's verdict on its exported file (met is the steps' simulated verdict); null on "
        "searches stored before it existed.",
    )
    notes: list[str] = Field(default_factory=list)
