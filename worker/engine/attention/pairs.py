"""Attention-map fidelity of any model pair (issue 13): the one entry point, `attention_fidelity_of`, for the
fidelity job's step and the tests. It reads each model once by format (a side: onnx_side.OnnxSide,
torch_side.ProgramSide or torch_side.ScriptSide), decides from those reads whether there are maps to compare
or a note to give, and hands both captures to the shared folding (folding.py). It holds no ONNX or torch code
of its own.

- The golden model shows no attention at all (no attention softmax, no fused attention op, not a TorchScript
  model with attention): AttentionOutcome(None, None), nothing to store; the compressed model is not read.
- The golden model has no readable softmax but fused attention ops, or a TorchScript model has attention:
  a note saying why (each fused graph's ops; the TorchScript note once for the pair).
- The softmax counts differ: the count note, and the fused-operator notes that often explain it.
- Else both captures run over the dataset.

Mixed pairs (an ONNX model against a torch.export program, e.g. a .pt2 golden model and its ONNX export
quantized for deployment) are compared too: both sides give the same [N, heads, Tq, Tk] probabilities, and
the same checks guard the pairing (equal softmax counts, equal shapes on every batch, equal head counts),
so a pair whose graphs do not line up gets the count or shape note instead of numbers.

Models the caller has already loaded are not loaded again: `loaded[i]` is the torch.export program or the
TorchScript module of models[i] (the fidelity job's runners hold them), None to read the file. An ONNX graph
is parsed from its file once (onnxruntime does not keep the proto).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worker.engine.attention.folding import AttentionOutcome, compare_captures, count_note
from worker.engine.attention.onnx_side import OnnxSide
from worker.engine.attention.torch_side import TORCHSCRIPT_NOTE, ProgramSide, ScriptSide
from worker.engine.types import ONNX_FORMATS

ROLES = ("golden", "compressed")

Side = OnnxSide | ProgramSide | ScriptSide


def read_side(role: str, path: Path, fmt: str, loaded: Any, threads: int | None) -> Side | None:
    """One model read once: from `loaded` (a torch.export program or TorchScript module) when given, else
    from its file (an onnx_zip passed as the .onnx extracted from the archive); None for a format no side
    reads."""
    if fmt in ONNX_FORMATS:
        return OnnxSide(role, path)
    if fmt == "torch_export":
        return ProgramSide(role, loaded) if loaded is not None else ProgramSide.load(role, path, threads)
    if fmt == "torchscript":
        return ScriptSide(role, loaded) if loaded is not None else ScriptSide.load(role, path, threads)
    return None


def _script_note(roles: Sequence[str]) -> list[str]:
    """The TorchScript note once for the pair, saying which models it concerns."""
    if not roles:
        return []
    who = "both models" if len(roles) == len(ROLES) else f"the {roles[0]} model"
    return [f"{who}: {TORCHSCRIPT_NOTE}"]


def attention_fidelity_of(
    models: Sequence[tuple[Path, str]],
    arrays: Mapping[str, np.ndarray],
    *,
    loaded: Sequence[Any] | None = None,
    memory_budget_mb: float = 256.0,
    intra_op_threads: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> AttentionOutcome:
    """Per layer x head mean KL and JS between the golden and compressed attention maps, models being
    (path, format) of the golden and compressed models in any mix of formats; a note instead when they
    cannot be read or paired, and neither (AttentionOutcome(None, None)) when the golden model has no
    attention. on_progress(done, total) is called with done = 0 before the captures are built."""
    (golden_path, golden_fmt), (compressed_path, compressed_fmt) = models
    golden_loaded, compressed_loaded = loaded if loaded is not None else (None, None)
    golden = read_side(ROLES[0], golden_path, golden_fmt, golden_loaded, intra_op_threads)
    if golden is None or not (
        golden.softmaxes or golden.note() or (isinstance(golden, ScriptSide) and golden.attention)
    ):
        return AttentionOutcome(None, None)
    compressed = read_side(ROLES[1], compressed_path, compressed_fmt, compressed_loaded, intra_op_threads)
    if compressed is None:
        return AttentionOutcome(None, f"attention maps are not read from {compressed_fmt} models")
    fused = [note for side in (golden, compressed) if (note := side.note())]
    # A TorchScript model is never captured: in a pair with maps to compare it needs the note whatever its
    # graph holds; without (the golden model has none to read), only when it has attention.
    scripts = [
        side.role
        for side in (golden, compressed)
        if isinstance(side, ScriptSide) and (side.attention or golden.softmaxes)
    ]
    if not golden.softmaxes or scripts:
        return AttentionOutcome(None, " ".join([*fused, *_script_note(scripts)]))
    if isinstance(golden, ScriptSide) or isinstance(compressed, ScriptSide):  # ruled out above: for mypy
        raise AssertionError("a TorchScript side has no capture")
    if golden.softmaxes != compressed.softmaxes:
        count = count_note(golden.softmaxes, compressed.softmaxes) + ("." if fused else "")
        return AttentionOutcome(None, " ".join([count, *fused]))
    if on_progress is not None:
        on_progress(0, len(next(iter(arrays.values()))) if arrays else 0)
    with tempfile.TemporaryDirectory(prefix="kb-attention-") as tmp:
        golden_capture = golden.capture(Path(tmp), intra_op_threads)
        compressed_capture = compressed.capture(Path(tmp), intra_op_threads)
        del golden, compressed  # the ONNX protos: the capture sessions hold what they run
        return compare_captures(
            golden_capture,
            compressed_capture,
            arrays,
            memory_budget_mb=memory_budget_mb,
            on_progress=on_progress,
        )
