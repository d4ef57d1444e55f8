"""What a recovery produces: its steps (the compressed model measured on the held-out split before any method
and after each one), the recovered float model, and each held-out sample's KL and top-1 match before and
after (`measure`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import nn

from worker.engine.compression import CompressibleModel, compressed
from worker.engine.compression.model import Calibration, Feeds, first_sample
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.recovery.common import compressed_handle
from worker.engine.sweep.golden import GoldenReference, fidelity_summary, json_safe

if TYPE_CHECKING:
    import onnx


@dataclass
class Step:
    method: str
    seconds: float
    fidelity: dict[str, Any]
    details: dict[str, Any]


@dataclass
class RecoveryOutcome:
    module: nn.Module | onnx.ModelProto
    """The recovered float model (a torch module, or an ONNX model for an ONNX golden model): compressed by
    `plan` it is the recovered compressed model."""
    plan_id: str
    plan: dict[str, Any]
    steps: list[Step]
    input_names: list[str]
    threads: int | None = None
    per_sample: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    """"before" and "after": each held-out sample's "kl" and "top1_match" (`measure`'s `keep`)."""

    def handle(self) -> CompressibleModel:
        if isinstance(self.module, nn.Module):
            return compressed_handle(self.module, self.input_names)
        return OnnxCompressible(self.module, intra_op_threads=self.threads)

    def summary(self) -> dict[str, Any]:
        """JSON-ready: {"point_id", "before": fidelity, "after": fidelity, "steps": [{method, seconds,
        fidelity, details}], "per_sample": {kl_before, kl_after, top1_before, top1_after}}; "before" is the
        compressed model without recovery."""
        before, after = self.per_sample.get("before", {}), self.per_sample.get("after", {})
        return json_safe(
            {
                "point_id": self.plan_id,
                "before": self.steps[0].fidelity,
                "after": self.steps[-1].fidelity,
                "steps": [asdict(step) for step in self.steps],
                "per_sample": {
                    "kl_before": before.get("kl", []),
                    "kl_after": after.get("kl", []),
                    "top1_before": before.get("top1_match", []),
                    "top1_after": after.get("top1_match", []),
                },
            }
        )


def measure(
    reference: GoldenReference,
    handle: CompressibleModel,
    plan: Mapping[str, Any],
    calibration_feeds: Feeds,
    heldout: Feeds,
    labels: np.ndarray | None,
    batch_size: int,
    keep: dict[str, list[Any]] | None = None,
) -> dict[str, Any]:
    """The fidelity summary of `handle` compressed by `plan` against the golden reference; with `keep`, also
    each sample's KL and top-1 match put there."""
    handle.prepare(first_sample(heldout))
    with compressed(handle, plan, Calibration(handle, calibration_feeds, batch_size)) as (runner, _):
        report = compare_models(reference, runner, heldout, labels, FidelityParams(batch_size=batch_size))
    if keep is not None:
        keep["kl"] = [float(v) for v in report.per_sample["kl"]]
        keep["top1_match"] = [bool(v) for v in report.per_sample["top1_match"]]
    return fidelity_summary(report)
