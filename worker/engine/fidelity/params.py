"""Options and constants of the fidelity comparison (`worker.engine.fidelity.compare.compare_models`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from worker.engine.metrics.sequence import Pooling
from worker.engine.tasks.classification import DEFAULT_FLIP_CONFIDENCE

Task = str
""""auto", "classification", "embedding", "regression", "image" (the per-output accumulators), or a task with an
adapter in `worker.engine.tasks.interface` (`adapter_tasks()`)."""
OUTPUT_TASKS = ("auto", "classification", "embedding", "regression", "image")
OutputKind = Literal["classification", "embedding", "regression", "tensor"]

DEFAULT_THRESHOLD_KL = 0.1
"""Default per-sample KL (nats) above which a sample is flagged; about 0.14 bits of extra code length."""

MAX_STORED_FLIPS = 1000
"""At most this many label flips are listed per output; the total count is always reported."""

CONCENTRATION_SHARE = 0.5
"""Verdict rule: "concentrated" when the worst 10% of samples carry more than this share of the total."""

CONCENTRATION_RULE = "concentrated when the worst 10% of samples carry more than 50% of the total divergence"

NN_BLOCK = 1024
"""Rows per block of the nearest-neighbour search (memory O(N·NN_BLOCK))."""

LABELS_KEY = "labels"
"""Dataset array ignored by `bind_inputs`; used as labels by `compare_models` when none are passed."""

ATTENTION_MASK_KEY = "attention_mask"
"""Dataset array that masks the tokens of sequence outputs ``(N, T, D)`` (non-zero: a kept token)."""


@dataclass
class FidelityParams:
    """Options of `compare_models`.

    batch_size: samples per call to each runner (a runner whose inputs have a fixed batch dimension is
        called in chunks of that size, the last one padded).
    top_k: k of top-k agreement, top-k overlap and top-k accuracy (clipped to the number of classes).
    threshold_kl: a sample of the primary output is flagged when its KL(P‖Q) in nats exceeds this
        (default 0.1 nats); None flags by top-1 flips (and non-finite outputs) only.
    task: "auto" infers each output's kind from its shape; "classification", "embedding" or "regression"
        decide how 2-D outputs ``(N, D)`` with D ≥ 2 are compared (other shapes keep their inferred kind).
    outputs_are_probabilities: for classification outputs, True when the models output probabilities
        (clamped at 1e-12, renormalised, then logged), False for logits, None to detect it per model and
        output on the first batch (non-negative rows that sum to 1 within 1e-3).
    flip_confidence: the probability both models must reach for a top-1 flip to count as a confident
        flip in the per-class damage (`worker.engine.tasks.classification`).
    image_data_range: with task "image", the value range of the pictures (1.0: [0, 1]; 255 for 8-bit
        values) that PSNR and SSIM are computed over (`worker.engine.tasks.image_output`).
    pooling: how sequence outputs ``(N, T, D)`` are pooled into sentence embeddings: "mean" over the
        attention mask, or the "first" token (`worker.engine.metrics.sequence`).
    task_options: options of a task with an adapter (which outputs it reads, thresholds...), passed to the
        adapter as `TaskContext.options`; each adapter documents its keys.
    """

    batch_size: int = 64
    top_k: int = 5
    threshold_kl: float | None = DEFAULT_THRESHOLD_KL
    task: Task = "auto"
    outputs_are_probabilities: bool | None = None
    flip_confidence: float = DEFAULT_FLIP_CONFIDENCE
    image_data_range: float = 1.0
    pooling: Pooling = "mean"
    task_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")
        if self.task not in OUTPUT_TASKS:
            from worker.engine.tasks.interface import adapter_tasks

            if self.task not in adapter_tasks():
                raise ValueError(f"unknown task {self.task!r}")
        if self.threshold_kl is not None and not self.threshold_kl >= 0:
            raise ValueError(f"threshold_kl must be a non-negative number or None, got {self.threshold_kl}")
        if not 0.0 <= self.flip_confidence <= 1.0:
            raise ValueError(f"flip_confidence must be a probability in [0, 1], got {self.flip_confidence}")
        if self.pooling not in ("mean", "first"):
            raise ValueError(f"unknown pooling {self.pooling!r}")
