"""The fidelity job's attention step (issue 13, transformer internals): when the golden model has attention
softmaxes (a cheap scan of its graph), the per layer x head KL / JS of the two models' attention maps
(worker/engine/attention/) is one more stored document, RESULT_FIDELITY_ATTENTION.

Pairs: ONNX (or onnx_zip) and torch.export programs (.pt2), in any mix: a .pt2 golden model against its ONNX
export quantized for deployment is the common case, and both sides give the same [N, heads, Tq, Tk]
probabilities under the same pairing checks (a pair that does not line up gets the count or shape note).
When the golden model has no readable softmax, a document with only ``error`` says why where there is a
reason to give (attention fused into single operators, TorchScript models with attention ops); models with
no attention at all get nothing. One engine call decides and computes it all
(worker.engine.attention.attention_fidelity_of).

The check runs on every fidelity job, so it loads nothing again: the torch models come from the job's
runners (`reusable_models`), each ONNX graph is parsed once. Measured on a digits CNN pair without
attention (median of 5 calls after the first, 2-core machine): a .pt2 pair 67 ms -> 0.3 ms (the check used
to load the golden .pt2 twice and the compressed once; 23 ms when read from the files, the golden once), a
TorchScript pair 3.9 ms -> 0.3 ms; an EfficientNet-Lite0 .pt2 pair 1.76 s -> 1 ms (a load is 0.5 s there).

Like the robustness step, it is extra: graphs that cannot be paired, or anything that stops the step (a
bug, an allocation that fails), leave a document whose ``error`` says why, and the report stands. Only a
cancellation and the soft time limit go through.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded

from backend.contracts import RESULT_FIDELITY_ATTENTION
from worker.engine.errors import EngineError, JobCancelled
from worker.engine.types import ModelFormat, Runner
from worker.runtime import JobContext, json_safe, out_of_memory, raise_if_stopping

logger = logging.getLogger(__name__)


def reusable_models(runners: Sequence[Runner]) -> list[Any]:
    """What the step reads from the job's loaded models instead of their files: each torch runner's
    torch.export program or TorchScript module, None for an ONNX session (it keeps no graph proto). Taken
    before the runners are dropped, so the ONNX sessions are freed before the capture builds its own."""
    from worker.engine.loaders import TorchRunner

    return [
        (runner.program if runner.program is not None else runner.module)
        if isinstance(runner, TorchRunner)
        else None
        for runner in runners
    ]


def attention_results(
    ctx: JobContext,
    models: Sequence[tuple[Path, ModelFormat]],
    arrays: Mapping[str, np.ndarray],
    threads: int | None,
    at: float,
    loaded: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """{RESULT_FIDELITY_ATTENTION: document} for a pair whose golden model has attention softmaxes (or a
    reason why they cannot be read), else {}. models: (path, format) of the golden and compressed models;
    at: the job's progress fraction when the step starts (held there: the messages say how far it is);
    loaded: `reusable_models` of the job's runners (None: the files are read)."""
    from worker.engine import attention
    from worker.engine.loaders import extract_onnx_zip

    fraction = min(at, 0.999)  # 1.0 would bypass the progress writes' rate limit

    def on_progress(done: int, total: int) -> None:
        ctx.progress(fraction, f"attention maps: {done} of {total} samples")

    try:
        with tempfile.TemporaryDirectory(prefix="kb-attention-zip-") as tmp:
            paths = []
            for (path, fmt), role in zip(models, ("golden", "compressed"), strict=True):
                if fmt == "onnx_zip":
                    folder = Path(tmp) / role
                    folder.mkdir()
                    path = extract_onnx_zip(Path(path), folder)
                paths.append(Path(path))
            outcome = attention.attention_fidelity_of(
                list(zip(paths, (fmt for _, fmt in models), strict=True)), arrays, loaded=loaded,
                memory_budget_mb=ctx.settings.profile_memory_budget_mb, intra_op_threads=threads,
                on_progress=on_progress,
            )  # fmt: skip
        if outcome.document is None and outcome.note is None:
            return {}  # no attention in the golden model
        document = outcome.document if outcome.document is not None else {"error": outcome.note}
    except (JobCancelled, SoftTimeLimitExceeded):
        raise
    except Exception as exc:  # the attention maps are extra: whatever stops them must not take the report
        raise_if_stopping(exc)  # the engine wraps runtime failures; a stop inside one still stops
        document = {"error": attention_error(exc, out_of_memory(exc))}
    return {RESULT_FIDELITY_ATTENTION: json_safe(document)}


def attention_error(exc: Exception, memory: bool) -> str:
    """Why the attention document is missing, and what to change."""
    if memory:
        return (
            f"the attention maps ran out of memory ({type(exc).__name__}: {exc}). The report is complete. "
            "Lower KNEEBOARD_PROFILE_MEMORY_BUDGET_MB (it sizes the attention batches too) or raise the "
            "worker's memory limit (KNEEBOARD_WORKER_MEMORY_LIMIT_MB)."
        )
    if isinstance(exc, EngineError):
        return f"the attention maps could not be compared: {exc}. The report is complete."
    logger.exception("the attention maps failed")
    return (
        f"the attention maps could not be compared (internal error {type(exc).__name__}: {exc}; please "
        "report it). The report is complete."
    )
