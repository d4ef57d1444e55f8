"""The fidelity job's attention step (issue 13, transformer internals): when the golden model has attention
softmaxes (a cheap scan of its graph), the per layer x head KL / JS of the two models' attention maps
(worker/engine/attention/) is one more stored document, RESULT_FIDELITY_ATTENTION.

Pairs: ONNX (or onnx_zip) and torch.export programs (.pt2), in any mix: a .pt2 golden model against its ONNX
export quantized for deployment is the common case, and both sides give the same [N, heads, Tq, Tk]
probabilities under the same pairing checks (a pair that does not line up gets the count or shape note).
When the golden model has no readable softmax, a document with only ``error`` says why where there is a
reason to give (attention fused into single operators, TorchScript models with attention ops); models with
no attention at all get nothing.

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
from worker.engine.types import ModelFormat
from worker.runtime import JobContext, json_safe, out_of_memory, raise_if_stopping

logger = logging.getLogger(__name__)

ONNX_FORMATS = ("onnx", "onnx_zip")
KNOWN_FORMATS = (*ONNX_FORMATS, "torch_export", "torchscript")


def attention_results(
    ctx: JobContext,
    models: Sequence[tuple[Path, ModelFormat]],
    arrays: Mapping[str, np.ndarray],
    threads: int | None,
    at: float,
) -> dict[str, Any]:
    """{RESULT_FIDELITY_ATTENTION: document} for a pair whose golden model has attention softmaxes (or a
    reason why they cannot be read), else {}. models: (path, format) of the golden and compressed models;
    at: the job's progress fraction when the step starts (held there: the messages say how far it is)."""
    if any(fmt not in KNOWN_FORMATS for _, fmt in models):
        return {}
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
            formats = [fmt for _, fmt in models]
            onnx_pair = all(fmt in ONNX_FORMATS for fmt in formats)
            if onnx_pair:
                found = attention.has_attention(paths[0])
            else:
                found = attention.has_attention_of(paths[0], formats[0])
            if not found:
                note = attention.no_maps_note(list(zip(paths, formats, strict=True)))
                return {} if note is None else {RESULT_FIDELITY_ATTENTION: {"error": note}}
            ctx.progress(fraction, "attention maps: capturing the softmaxes of both models")
            budget = ctx.settings.profile_memory_budget_mb
            if onnx_pair:
                outcome = attention.attention_fidelity(
                    paths[0], paths[1], arrays, memory_budget_mb=budget, intra_op_threads=threads,
                    on_progress=on_progress,
                )  # fmt: skip
            else:
                outcome = attention.attention_fidelity_of(
                    list(zip(paths, formats, strict=True)), arrays, memory_budget_mb=budget,
                    intra_op_threads=threads, on_progress=on_progress,
                )  # fmt: skip
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
