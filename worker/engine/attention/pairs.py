"""Attention-map fidelity of any model pair (issue 13): picks each side's capture by format and hands both to
the shared folding (folding.py). It holds no ONNX or torch code of its own: onnx_side.py and torch_side.py do.

Mixed pairs (an ONNX model against a torch.export program, e.g. a .pt2 golden model and its ONNX export
quantized for deployment) are compared too: both sides give the same [N, heads, Tq, Tk] probabilities, and
the same checks guard the pairing (equal softmax counts, equal shapes on every batch, equal head counts),
so a pair whose graphs do not line up gets the count or shape note instead of numbers. TorchScript models
get a note (torch_side.TORCHSCRIPT_NOTE) when they have attention ops.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from worker.engine.attention.folding import AttentionCapture, AttentionOutcome, compare_captures
from worker.engine.attention.onnx_side import OnnxCapture, fused_attention_note, has_attention
from worker.engine.attention.torch_side import (
    TORCHSCRIPT_NOTE,
    TorchCapture,
    has_torch_attention,
    torch_fused_note,
    torchscript_note,
)

ONNX_FORMATS = ("onnx", "onnx_zip")
"""onnx_zip models are passed here as the .onnx extracted from the archive (the step extracts them)."""
SUPPORTED_FORMATS = (*ONNX_FORMATS, "torch_export")
ROLES = ("golden", "compressed")


def has_attention_of(path: Path, fmt: str) -> bool:
    """The cheap check for a golden model of any supported format (False for the others)."""
    if fmt in ONNX_FORMATS:
        return has_attention(path)
    if fmt == "torch_export":
        return has_torch_attention(path)
    return False


def no_maps_note(models: Sequence[tuple[Path, str]]) -> str | None:
    """Why a pair whose golden model has no readable attention softmax gets no maps (TorchScript, or
    attention fused into single ops), or None when neither model has attention at all."""
    notes = []
    for (path, fmt), role in zip(models, ROLES, strict=True):
        if fmt in ONNX_FORMATS:
            notes.append(fused_attention_note({role: path}))
        elif fmt == "torch_export":
            notes.append(torch_fused_note(role, path))
        elif fmt == "torchscript":
            note = torchscript_note(path)
            notes.append(f"the {role} model: {note}" if note else None)
    kept = [note for note in notes if note]
    return " ".join(dict.fromkeys(kept)) or None


def _capture(path: Path, fmt: str, workdir: Path, role: str, threads: int | None) -> AttentionCapture:
    if fmt in ONNX_FORMATS:
        return OnnxCapture(path, workdir, role, threads)
    return TorchCapture(path, role, threads)


def attention_fidelity_of(
    models: Sequence[tuple[Path, str]],
    arrays: Mapping[str, np.ndarray],
    *,
    memory_budget_mb: float = 256.0,
    intra_op_threads: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> AttentionOutcome:
    """Per layer x head mean KL and JS between the golden and compressed attention maps, models being
    (path, format) of ONNX models or torch.export programs in any mix."""
    if any(fmt == "torchscript" for _, fmt in models):
        return AttentionOutcome(None, TORCHSCRIPT_NOTE)
    unsupported = [fmt for _, fmt in models if fmt not in SUPPORTED_FORMATS]
    if unsupported:
        return AttentionOutcome(None, f"attention maps are not read from {', '.join(unsupported)} models")
    with tempfile.TemporaryDirectory(prefix="kb-attention-") as tmp:
        golden, compressed = (
            _capture(path, fmt, Path(tmp), role, intra_op_threads)
            for (path, fmt), role in zip(models, ROLES, strict=True)
        )
        return compare_captures(
            golden, compressed, arrays, memory_budget_mb=memory_budget_mb, on_progress=on_progress
        )
