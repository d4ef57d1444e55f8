"""A job's progress fraction from the work it has counted: each step of a job owns a span of the bar, in
proportion to the samples it compares, and moves through it as its own count (samples, slices, cells)
moves, so the bar and the message ("16 of 18 slices") say the same thing and the bar never goes back."""

from __future__ import annotations

from typing import NamedTuple

from backend.robustness_contracts import RobustnessOptions

LAST = 0.999
"""The most a step reports: 1.0 would bypass the progress writes' rate limit (the job's finish writes it)."""


def span_fraction(start: float, end: float, done: int, total: int) -> float:
    """The job's fraction when a step that runs from `start` to `end` has done `done` of its `total` units."""
    part = min(max(done, 0), max(total, 1)) / max(total, 1)
    return min(start + (end - start) * part, LAST)


def robustness_work(options: RobustnessOptions | None, n: int) -> tuple[int, int]:
    """(slice units, out-of-distribution units) of a fidelity job's robustness step over n samples, in
    samples compared by both models, the clean pass's unit: each slice x severity compares the first
    min(n, max_samples) samples; the out-of-distribution set, whose size is known only once it is read,
    is counted as that many too (it is cut to max_samples)."""
    if options is None:
        return 0, 0
    m = min(n, options.max_samples) if options.max_samples is not None else n
    points = len(options.slices) * len(options.severities)
    return points * m, (m if options.ood_dataset_id is not None else 0)


def generation_work(prompts: int, new_tokens: int) -> int:
    """The text generation step's units: each prompt continued new_tokens tokens by each model is
    new_tokens forward passes of each, counted like new_tokens clean samples (a KV-cache step is cheaper
    than a whole sample, a prompt that stops at EOS shorter: an upper bound, it is the count that moves)."""
    return max(prompts, 0) * max(new_tokens, 0)


class Spans(NamedTuple):
    """Where a fidelity job's steps start on its bar, 0..1 (each ends where the next starts)."""

    generation: float  # the text generation after the clean pass
    rerun: float  # the kernel gap's output-level re-run
    robustness: float  # the robustness slices
    ood: float  # the out-of-distribution set
    profile: float  # the layer profile (to 1)


def fidelity_spans(
    n: int, n_rerun: int, n_profiled: int, robustness: tuple[int, int], generation: int = 0
) -> Spans:
    """The steps' starts for a job over n samples with `generation` units of text generation
    (generation_work), the kernel gap re-running n_rerun, robustness units (robustness_work) and the
    profile over n_profiled samples weighed 3x (it captures every layer of both models)."""
    slices, ood = robustness
    g = n + generation
    total = max(g + n_rerun + slices + ood + 3 * n_profiled, 1)
    return Spans(
        generation=n / total,
        rerun=g / total,
        robustness=(g + n_rerun) / total,
        ood=(g + n_rerun + slices) / total,
        profile=(g + n_rerun + slices + ood) / total,
    )
