"""The recovery job's per-layer before/after (issue 14): the golden model profiled layer by layer against the
compressed model before recovery and against the recovered one, on the held-out split, with the fidelity
job's own layer profile (worker/engine/layer_profile). Both compressed models are the exported ONNX files,
so a .pt2 golden model is matched to them across formats by module call, an ONNX one by name.

Like the fidelity job's profile, this is extra: a side that cannot be profiled gets ``{"error": ...}``
saying why, and the recovery stands. Only a cancellation and the soft time limit go through.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded

from worker.engine.errors import JobCancelled
from worker.engine.types import ModelFormat
from worker.jobs.layer_profile_step import profile_error
from worker.runtime import JobContext, json_safe, out_of_memory, raise_if_stopping

SIDES = ("before", "after")


def layers_before_after(
    ctx: JobContext,
    golden: tuple[Path, ModelFormat],
    compressed: Mapping[str, Path],
    heldout: Mapping[str, np.ndarray],
    threads: int | None,
    start: float,
    end: float,
) -> dict[str, Any]:
    """{"before": profile document, "after": profile document}, each one the fidelity job's
    `fidelity.layers` document (or {"error": ...}); progress moves from `start` to `end`."""
    from worker.engine.layer_profile import profile_layers

    budget = ctx.settings.profile_memory_budget_mb
    n = len(next(iter(heldout.values()))) if heldout else 0
    out: dict[str, Any] = {}
    for i, side in enumerate(SIDES):
        at = start + (end - start) * i / len(SIDES)

        def on_progress(done: int, at: float = at, side: str = side) -> None:
            ctx.progress(at + (end - start) / len(SIDES) * done / max(n, 1), f"layers {side}: {done} of {n}")

        try:
            profile = profile_layers(
                *golden,
                compressed[side],
                "onnx",
                [dict(heldout)],
                on_progress=on_progress,
                memory_budget_mb=budget,
                intra_op_threads=threads,
            )
            out[side] = cast(dict[str, Any], json_safe(profile.to_dict()))
        except (JobCancelled, SoftTimeLimitExceeded):
            raise
        except Exception as exc:  # the per-layer view is extra: the recovery and its figures stand
            raise_if_stopping(exc)
            out[side] = {"error": profile_error(exc, out_of_memory(exc), budget)}
    return out
