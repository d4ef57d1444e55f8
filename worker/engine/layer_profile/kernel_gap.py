"""Kernel gap: how much more error the runtime's real kernels add than the simulated quantization predicts.

The per-layer profile (layer_profile.py) runs both ONNX models with graph optimizations disabled, so a QDQ
model runs as *simulated* quantization: QuantizeLinear -> DequantizeLinear in float, then float Conv /
Gemm (as onnxruntime.quantization.qdq_loss_debug does). The output-level comparison (fidelity.py) runs the
models the way they are deployed: onnxruntime's default graph optimizations fuse the QDQ groups into int8
kernels (QLinearConv, QGemm, ...). The two agree when the int8 kernels compute exactly what the simulation
computes. They do not when

- the kernels saturate: on x86-64 CPUs without VNNI (AVX2 / AVX512 without avx512_vnni or avx_vnni),
  onnxruntime's U8S8 kernels (uint8 activations, int8 weights; S8S8 QDQ models run on them too) multiply
  with VPMADDUBSW, whose 16-bit intermediate sums of two products can overflow and are clamped.
  onnxruntime's quantization guide ("When and why do I need to try U8U8?", "When to use reduce-range
  and per-channel quantization?", https://onnxruntime.ai/docs/performance/model-optimizations/
  quantization.html) recommends quantizing with reduce_range=True (7-bit weights) or the U8U8 format,
  and reduce_range whenever per-channel weights are used on such machines;
- or the runtime fuses or reorders ops differently than the simulation (e.g. requantizes in a different
  place, or folds an activation into the int8 kernel).

`kernel_gaps` compares, for every model output, the profile's accumulated SQNR of the layer whose tensor is
that graph output (the simulated prediction) with the output SQNR the real runtime measured. Both must be
measured on the same samples: the fidelity handler passes the runtime's output metrics over exactly the
profile's samples (the first ``layer_profile_samples``; the full report's metrics when the profile covers
the whole dataset, otherwise a second output-level pass of the deployed runtimes over that subset).

gap_db = simulated SQNR - runtime SQNR: positive when the runtime is worse than simulated. A gap is
*significant* when it exceeds `threshold_db` and the runtime SQNR is below `noise_floor_db`: two float
models both above ~60 dB differ only by float rounding order (fused float kernels), not by int8 kernels.
Plain functions over numbers, no database or HTTP.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from worker.engine.layer_profile import LayerFidelity
from worker.engine.metrics.numerical import json_float

DEFAULT_THRESHOLD_DB = 3.0
"""A runtime worse than the simulation by more than this (dB) is flagged: 3 dB is twice the error power."""

DEFAULT_NOISE_FLOOR_DB = 60.0
"""Runtime SQNRs at or above this are float rounding noise, never flagged whatever the gap."""


@dataclass(frozen=True)
class KernelGap:
    """One model output: the simulated and the runtime SQNR (dB; +inf when the error is exactly 0, NaN when
    undefined) and the gap between them."""

    output: str
    """The golden model's output name (the profile layer of the same name)."""
    compressed_output: str
    simulated_sqnr_db: float
    runtime_sqnr_db: float
    threshold_db: float
    noise_floor_db: float

    @property
    def gap_db(self) -> float:
        """simulated - runtime (dB): positive when the runtime kernels lose more than simulated. 0 when both
        are +inf, ±inf when only one is, NaN when either is undefined."""
        sim, rt = self.simulated_sqnr_db, self.runtime_sqnr_db
        if math.isnan(sim) or math.isnan(rt):
            return math.nan
        if sim == rt:  # also both +inf
            return 0.0
        return sim - rt

    @property
    def significant(self) -> bool:
        """The runtime is worse than simulated by more than threshold_db, and below the noise floor."""
        gap = self.gap_db
        return bool(gap > self.threshold_db and self.runtime_sqnr_db < self.noise_floor_db)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe; a non-finite SQNR or gap is None, +inf SQNR also sets ``*_sqnr_db_infinite``."""
        return {
            "output": self.output,
            "compressed_output": self.compressed_output,
            "simulated_sqnr_db": json_float(self.simulated_sqnr_db),
            "simulated_sqnr_db_infinite": self.simulated_sqnr_db == math.inf,
            "runtime_sqnr_db": json_float(self.runtime_sqnr_db),
            "runtime_sqnr_db_infinite": self.runtime_sqnr_db == math.inf,
            "gap_db": json_float(self.gap_db),
            "significant": self.significant,
            "threshold_db": self.threshold_db,
        }


def sqnr_of_metrics(metrics: Mapping[str, Any]) -> float:
    """The SQNR (dB) of an output's JSON metrics dict (``sqnr_db`` + ``sqnr_db_infinite``, as written by
    NumericalAccumulator.to_dict): +inf when flagged infinite, NaN when undefined or when some samples were
    left out as non-finite (the profile reports such a layer as undefined too)."""
    if metrics.get("sqnr_db_infinite"):
        value = math.inf
    elif metrics.get("sqnr_db") is None:
        return math.nan
    else:
        value = float(metrics["sqnr_db"])
    n, n_finite = metrics.get("n_samples"), metrics.get("n_finite")
    if n is not None and n_finite is not None and n_finite != n:
        return math.nan
    return value


def kernel_gaps(
    layers: Sequence[LayerFidelity],
    runtime_outputs: Mapping[str, Mapping[str, Any]],
    *,
    threshold_db: float = DEFAULT_THRESHOLD_DB,
    noise_floor_db: float = DEFAULT_NOISE_FLOOR_DB,
) -> list[KernelGap]:
    """The kernel gap of every model output that is also a profiled layer.

    layers: the profile's layers (simulated quantization). runtime_outputs: golden output name -> output
    metrics of the real runtime over the same samples, with at least ``compressed_output``, ``sqnr_db``
    and ``sqnr_db_infinite`` (FidelityReport.outputs). An output counts only when a layer has its golden
    name and the compressed output's name (so both sides are the graph outputs themselves, not e.g. a
    dequantized copy); outputs without such a layer are left out. Ordered as runtime_outputs.
    """
    by_name = {layer.name: layer for layer in layers}
    gaps: list[KernelGap] = []
    for output, metrics in runtime_outputs.items():
        layer = by_name.get(output)
        compressed = str(metrics.get("compressed_output", output))
        if layer is None or layer.compressed_name != compressed:
            continue
        gaps.append(
            KernelGap(
                output=output,
                compressed_output=compressed,
                simulated_sqnr_db=float(layer.accumulated.sqnr_db),
                runtime_sqnr_db=sqnr_of_metrics(metrics),
                threshold_db=threshold_db,
                noise_floor_db=noise_floor_db,
            )
        )
    return gaps


def cpu_vnni(cpuinfo: str | None = None) -> bool | None:
    """Whether this x86-64 CPU has VNNI (``avx512_vnni`` or ``avx_vnni`` in /proc/cpuinfo's flags); None
    when unknown (no /proc/cpuinfo, or not an x86 CPU). `cpuinfo` replaces the file's text (tests)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            return None
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags.update(value.split())
    if not flags or not ({"sse2", "avx2"} & flags):
        return None  # not x86 (ARM lists "Features"), or nothing to go by
    return bool({"avx512_vnni", "avx_vnni"} & flags)


def kernel_gap_note(gap: KernelGap, n_samples: int, vnni: bool | None = None) -> str:
    """What a significant gap means and what to do about it, for the profile's notes. vnni: whether the
    worker's CPU has VNNI (see `cpu_vnni`), which tells saturation from other causes; None when unknown."""
    if math.isfinite(gap.gap_db):
        head = f"Runtime kernels lose {gap.gap_db:.1f} dB more than simulated quantization at output '{gap.output}'"
    else:
        head = (
            f"Runtime kernels add error that simulated quantization does not predict at output '{gap.output}'"
        )
    simulated = "exact (+inf dB)" if gap.simulated_sqnr_db == math.inf else f"{gap.simulated_sqnr_db:.1f} dB"
    saturation = (
        "On x86-64 CPUs without VNNI (no avx512_vnni / avx_vnni), onnxruntime's U8S8 int8 kernels can "
        "saturate (VPMADDUBSW's 16-bit sums): quantize with reduce_range=True (needed with per-channel "
        "weights on such CPUs) or use U8U8 (uint8 weights), or deploy on a VNNI or ARM CPU."
    )
    fusion = "Or the runtime fuses ops differently than the simulation (e.g. where it requantizes)."
    if vnni is False:
        cause = f"This worker's CPU has no VNNI, so saturation is the likely cause. {saturation} {fusion}"
    elif vnni is True:
        cause = (
            "This worker's CPU has VNNI, so int8 saturation is unlikely: the runtime probably fuses ops "
            f"differently than the simulation (e.g. where it requantizes). {saturation}"
        )
    else:
        cause = f"A common cause: {saturation[0].lower()}{saturation[1:]} {fusion}"
    return (
        f"{head}: onnxruntime with its default optimizations (fused int8 kernels) measured an SQNR of "
        f"{gap.runtime_sqnr_db:.1f} dB on the profile's {n_samples} samples, where the simulation predicts "
        f"{simulated}. The per-layer numbers are simulated, so the deployed model is worse than they show. "
        f"{cause} Check on the deployment hardware."
    )
