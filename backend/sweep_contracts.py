"""A sweep job's parameters (SweepJobParams, re-exported by backend.contracts): the configurations, the
mixed-precision source, timing and export, the device the points run on, the task every point is scored on,
and the frontier the sweep opens with (objectives and bounds, checked against the task's metrics)."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic.json_schema import JsonDict

from backend.compression_contracts import (
    ActivationQuantIn,
    CompressionConfigIn,
    FloatCastIn,
    LowRankIn,
    MagnitudePruneIn,
    QuantizeIn,
    WeightQuantIn,
)
from task_specs.metrics import (
    TASK_PREFIX,
    TaskName,
    TaskOptions,
    direction,
    directions,
    foreign_task_metrics,
    metric_names,
)

DEVICE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"


def device_queue(queue_name: str, device: str) -> str:
    """The queue a worker started with `kneeboard worker --device NAME` consumes."""
    return f"{queue_name}.device.{device}"


ObjectiveSpec = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.\-]{1,100}:(min|max)$")]
BoundSpec = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.\-]{1,100}(<=|>=)[-+0-9.eE]{1,40}$")]


def _default_sweep_configs() -> list[CompressionConfigIn]:
    w8 = WeightQuantIn(bits=8, per_channel=True)
    w4 = WeightQuantIn(bits=4, per_channel=True)
    return [
        QuantizeIn(weights=w8, activations=ActivationQuantIn(bits=8)),
        QuantizeIn(weights=w8, activations=ActivationQuantIn(bits=16)),
        QuantizeIn(weights=w4, activations=ActivationQuantIn(bits=8)),
        w8,
        w4,
        FloatCastIn(dtype="fp16"),
        MagnitudePruneIn(sparsity=0.5),
        LowRankIn(rank_ratio=0.5),
    ]


class MixedPrecisionSource(BaseModel):
    """Points taken from a succeeded sensitivity job's mixed-precision planning, one per average bit-width."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    sensitivity_job_id: uuid.UUID
    average_bits: list[float] = Field(min_length=1, max_length=16, description="Budgets, in average bits.")

    @model_validator(mode="after")
    def _check(self) -> MixedPrecisionSource:
        if any(not 1 <= b <= 16 for b in self.average_bits):
            raise ValueError("average_bits must lie between 1 and 16")
        return self


SEARCH_METRICS = (
    "top1_agreement",
    "kl_mean",
    "js_mean",
    "sqnr_db",
    "cosine_mean",
    "accuracy",
    "accuracy_drop_pp",
    "ece",
    "f1_macro_vs_golden",
    "f1_macro_drop_pp",
    "borderline_agreement",
)
"""The measured fidelity objectives of a sweep point (worker/jobs/sweep.py OBJECTIVE_PATHS) a search can hold;
task.<metric> of the sweep's task besides."""


class SearchSource(BaseModel):
    """Accuracy-aware search (issue 33): the smallest plan whose measured metric holds the threshold. Layers
    ranked by a sensitivity scan, most sensitive first; step k keeps the k most sensitive at `high`, the rest
    at `low`; k = 0 first, then a binary search over k, every step measured for real and stored as a point."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    sensitivity_job_id: uuid.UUID = Field(
        description="A succeeded scan of the same model: the layer ranking."
    )
    metric: str = Field(
        default="top1_agreement",
        max_length=100,
        description="The measured objective that must hold: top1_agreement, kl_mean, accuracy_drop_pp, ... or "
        "task.<metric> of the sweep's task.",
    )
    threshold: float = Field(description="The value the metric must reach (see direction).")
    direction: Literal["at_least", "at_most"] | None = Field(
        default=None,
        description="at_least (metric >= threshold) or at_most (metric <= threshold); null: from the metric "
        "(higher is better for agreement, accuracy, SQNR...; lower for KL, drops...).",
    )
    low: CompressionConfigIn = Field(
        default_factory=lambda: WeightQuantIn(bits=4, per_channel=True),
        description="The most aggressive config: every layer not returned to high precision.",
    )
    high: CompressionConfigIn | None = Field(
        default_factory=lambda: WeightQuantIn(bits=8, per_channel=True),
        description="The config a sensitive layer returns to; null: float (left uncompressed).",
    )
    objective: Literal["size"] = Field(
        default="size", description="What the search makes smallest (size only: latency and memory not yet)."
    )
    max_steps: int | None = Field(
        default=None, ge=1, le=64, description="Measured steps at most; null: log2(layers) + 2."
    )

    def resolved_direction(self) -> Literal["at_least", "at_most"]:
        if self.direction is not None:
            return self.direction
        return "at_least" if direction(self.metric) == "max" else "at_most"


class SweepJobParams(BaseModel):
    """Evaluate whole-model compression configurations (one point each, spread over the worker pool):
    fidelity, size, MACs/BOPs and measured latency, for a Pareto frontier; each point exportable."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    model_id: uuid.UUID = Field(description="The golden model.")
    dataset_id: uuid.UUID = Field(
        description="Evaluation data. When a configuration quantizes activations and no calibration_dataset_id "
        "is named, its first calibration_samples samples (default min(128, N // 4)) are held out to calibrate "
        "and the next max_samples are evaluated: never the same samples."
    )
    configs: list[CompressionConfigIn] = Field(
        default_factory=_default_sweep_configs,
        max_length=64,
        description="Whole-model configurations (each applied to every compressible layer).",
    )
    mixed_precision: MixedPrecisionSource | None = Field(
        default=None, description="Also the mixed-precision plans of a sensitivity job of the same model."
    )
    search: SearchSource | None = Field(
        default=None,
        description="Also find the smallest plan whose measured metric holds a threshold (its steps stored as "
        "points labelled search-k<k>, the summary at GET /jobs/{id}/sweep/search).",
    )
    max_samples: int = Field(default=512, ge=1, le=100_000, description="Samples evaluated (at most).")
    calibration_dataset_id: uuid.UUID | None = Field(
        default=None,
        description="A dataset of the same project, inputs shaped like the model's, whose first "
        "calibration_samples samples calibrate the activation ranges (default min(256, its length)); null "
        "holds out the evaluation dataset's first samples instead. Only for sweeps that quantize activations.",
    )
    calibration_samples: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Samples that calibrate activation ranges; null: min(256, length) of a calibration dataset, "
        "min(128, N // 4) held out of the evaluation dataset.",
    )
    batch_size: int = Field(default=64, ge=1, le=65536)
    latency: bool = Field(
        default=True,
        description="Time the exported file of every point a real runtime can execute (simulated-only points "
        "are not timed).",
    )
    latency_batch_sizes: list[int] = Field(default_factory=lambda: [1, 32], min_length=1, max_length=4)
    latency_repeats: int = Field(default=30, ge=3, le=1000)
    # On by default: measuring one point costs 0.55-0.65 s on EfficientNet-Lite0 at 224 px (its evaluation and
    # export took 2.6-14 s) and 1.0-1.1 s on the digits CNN (evaluation + export 0.06-0.16 s), mostly the child
    # interpreter's start and imports (bench/bench_runtime_memory.py, on a machine at load 9 on 2 cores).
    memory: bool = Field(
        default=True,
        description="Measure the run-time memory of every point a real runtime can execute: the peak resident "
        "memory of an onnxruntime session running its export at the first latency batch size, in a child "
        "process (objectives runtime_memory_mib, peak_rss_mib, runtime_memory_ratio).",
    )
    export: bool = Field(default=True, description="Store each point's model as a downloadable ONNX file.")
    attribution: bool = Field(
        default=True,
        description="Split the divergence of every point that combines techniques (a schedule, or weights and "
        "activations quantized together) by technique: each alone, cumulatively and leave-one-out; n "
        "techniques cost up to 3n-3 more fidelity passes of that point.",
    )
    threads: int = Field(default=1, ge=1, le=256, description="Intra-op threads, pinned for timing.")
    device: str | None = Field(
        default=None,
        pattern=DEVICE_NAME_PATTERN,
        description="Evaluate and time every point on the worker(s) started with `kneeboard worker --device "
        "NAME` (target hardware); planning and merging stay on the general pool.",
    )
    task: TaskName = Field(
        default="auto",
        description="The task every point is scored on, as a fidelity job's `task`: its task block's numbers "
        "become objectives named task.<metric> (e.g. task.miou_drop, task.wer_delta, task.psnr_drop_db).",
    )
    task_options: TaskOptions = Field(
        default_factory=dict, max_length=64, description="The task's options, as a fidelity job's."
    )
    image_data_range: float = Field(
        default=1.0, gt=0, le=1e6, description="Task 'image': the pictures' value range (1 or 255)."
    )
    objectives: list[ObjectiveSpec] = Field(
        default_factory=list,
        max_length=3,
        description="The frontier the sweep opens with: name:min or name:max, e.g. task.miou_drop:min. A "
        "task.<metric> must be a metric of the sweep's task (x-task-metrics: each task's metrics and the "
        "direction that is better).",
        json_schema_extra=lambda schema: schema.update({"x-task-metrics": task_directions()}),
    )
    bounds: list[BoundSpec] = Field(
        default_factory=list,
        max_length=10,
        description="The frontier's constraints: name<=value or name>=value, e.g. task.miou_drop<=0.005.",
    )

    @model_validator(mode="after")
    def _check(self) -> SweepJobParams:
        if not self.configs and self.mixed_precision is None and self.search is None:
            raise ValueError("a sweep needs configs, mixed_precision, search or a mix")
        if any(not 1 <= b <= 4096 for b in self.latency_batch_sizes):
            raise ValueError("latency_batch_sizes must lie between 1 and 4096")
        if self.task == "language_model" and self.task_options.get("generate_tokens"):
            raise ValueError(
                "a sweep does not generate text: its points are compared teacher-forced only; leave "
                "generate_tokens out and run a fidelity job with it on the point's model"
            )
        foreign = foreign_task_metrics(self.task, self.objectives + self.bounds)
        if foreign:
            raise ValueError(
                f"{', '.join(foreign)} is not a metric of task {self.task!r}; its task metrics: "
                f"{', '.join(metric_names(self.task)) or 'none'}"
            )
        if self.search is not None:
            metric = self.search.metric
            known = [*SEARCH_METRICS, *metric_names(self.task)]
            if metric not in known:
                hint = (
                    f"; {metric} is not a metric of task {self.task!r}"
                    if metric.startswith(TASK_PREFIX)
                    else ""
                )
                raise ValueError(
                    f"search.metric {metric!r} is not a measured objective of a sweep point{hint}; known: "
                    f"{', '.join(known)}"
                )
        return self


def task_directions() -> JsonDict:
    """Task → {"task.<metric>": "min" | "max"}: the dashboard reads it from the schema (no second rule there)."""
    table: JsonDict = {}
    for task, names in directions().items():
        table[task] = {name: better for name, better in names.items()}
    return table
