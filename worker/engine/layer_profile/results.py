"""What a per-layer profile reports: per-comparison totals, one entry per matched layer, the whole profile."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from worker.engine.layer_profile.shift import ActivationShift
from worker.engine.metrics.numerical import json_float, json_sqnr


@dataclass(frozen=True)
class LayerStats:
    """Dataset totals of one comparison: SQNR (dB, +inf when the error is exactly 0, NaN when undefined)
    and per-sample cosine mean/min (None when the layer's tensor is not batch-first)."""

    sqnr_db: float
    cosine_mean: float | None
    cosine_min: float | None

    def to_dict(self) -> dict[str, Any]:
        """``{"cosine_mean", "cosine_min", "sqnr_db", "sqnr_db_infinite"}``, JSON-safe (see json_sqnr)."""
        return {
            "cosine_mean": None if self.cosine_mean is None else json_float(self.cosine_mean),
            "cosine_min": None if self.cosine_min is None else json_float(self.cosine_min),
            **json_sqnr(self.sqnr_db),
        }


@dataclass(frozen=True)
class LayerFidelity:
    """One matched layer. `name` is the golden tensor / module name, `depth` its index in the profile
    (topological order of the golden model) and `depth_fraction` = depth / (number of layers - 1)."""

    name: str
    compressed_name: str
    op_type: str
    depth: int
    depth_fraction: float
    accumulated: LayerStats
    local: LayerStats | None
    local_note: str | None = None
    """Why `local` is None (or anything else worth knowing about it)."""
    qdq_err: LayerStats | None = None
    """The compressed model's own quantizer at this tensor (QDQ ONNX only): the tensor entering its
    QuantizeLinear vs the output of the DequantizeLinear that follows, both from the compressed model's own
    run (onnxruntime's qdq_loss_debug calls this qdq_err). None when the compressed tensor is not the
    output of a QuantizeLinear -> DequantizeLinear pair."""
    qdq_input: str | None = None
    """The compressed model's tensor entering that QuantizeLinear."""
    canonical_id: str | None = None
    """The layer's one identity (torch module path when the model records it, see inspection.identity);
    the model page, sensitivity scans and this profile share it."""
    aliases: tuple[str, ...] = ()
    """Other names of the layer (tensor, ONNX node name)."""
    match_method: str | None = None
    """How the compressed layer was found: "name_map", "name", "structure" or "weights"."""
    match_confidence: float | None = None
    """1 for names, the structural score in [0, 1] otherwise (layer_matching.align)."""
    shift: ActivationShift | None = None
    """Activation range, histograms, clipping, dead units and error amplification (shift.py)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "compressed_name": self.compressed_name,
            "op_type": self.op_type,
            "depth": self.depth,
            "depth_fraction": self.depth_fraction,
            "accumulated": self.accumulated.to_dict(),
            "local": None if self.local is None else self.local.to_dict(),
            "local_note": self.local_note,
            "qdq_err": None if self.qdq_err is None else self.qdq_err.to_dict(),
            "qdq_input": self.qdq_input,
            "canonical_id": self.canonical_id,
            "aliases": list(self.aliases),
            "match_method": self.match_method,
            "match_confidence": self.match_confidence,
            "shift": None if self.shift is None else self.shift.to_dict(),
        }


@dataclass(frozen=True)
class LikelyCause:
    """One likely cause of the divergence (causes.py). `kind` is "clipping", "dead_units",
    "error_growth", "local_error" or "calibration_range"; `layer` the golden layer's name (`to_layer` the
    layer an error grows to); `value` the measure compared with `threshold`, `score` = how many times over
    it (the ranking key); `numbers` the figures the message quotes."""

    kind: str
    layer: str
    label: str
    to_layer: str | None
    value: float
    threshold: float
    score: float
    message: str
    numbers: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "layer": self.layer,
            "label": self.label,
            "to_layer": self.to_layer,
            "value": json_float(self.value),
            "threshold": self.threshold,
            "score": json_float(self.score),
            "message": self.message,
            "numbers": {key: v for key, v in self.numbers.items() if json_float(v) is not None},
        }


@dataclass
class LayerProfile:
    """The per-layer profile: matched layers in topological order, the names left unmatched on each side,
    and notes on how the profile was made (matching rule, layers or values left out and why).
    `profile_batch_size` is the number of samples the profile ran at once (chosen from the memory budget)."""

    layers: list[LayerFidelity]
    unmatched_golden: list[str] = field(default_factory=list)
    unmatched_compressed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_samples: int = 0
    profile_batch_size: int = 0
    likely_causes: list[LikelyCause] = field(default_factory=list)
    """Ranked likely causes of the divergence, each with the numbers behind it (causes.py)."""
    not_applicable: str | None = None
    """Why a per-layer comparison does not apply (different architectures: run.architecture_note)."""
    calibration_samples: int | None = None
    """Calibration samples the golden ranges were taken over; None without a calibration set (or when it
    could not be run: the notes say why)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: non-finite numbers become None (SQNR +inf is flagged by ``sqnr_db_infinite``)."""
        return {
            "n_samples": self.n_samples,
            "profile_batch_size": self.profile_batch_size,
            "layers": [layer.to_dict() for layer in self.layers],
            "unmatched_golden": list(self.unmatched_golden),
            "unmatched_compressed": list(self.unmatched_compressed),
            "notes": list(self.notes),
            "likely_causes": [cause.to_dict() for cause in self.likely_causes],
            "not_applicable": self.not_applicable,
            "calibration_samples": self.calibration_samples,
        }
