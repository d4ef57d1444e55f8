"""Runnable ONNX files of sweep points, each with a manifest saying what it is.

`export_point(golden, config_or_plan, out_dir, kind=...)` writes `<point id>.<kind>.onnx` and
`<point id>.<kind>.json` (the manifest) and returns (path, manifest). The kinds and which configs have
which are described in `worker.engine.sweep.runtime_forms`:

* "simulated" → "simulated-float" (or "fp32" for the golden point): the graph the simulation ran. For
  an ONNX golden model it is the very graph `compressed()` runs (same weights, same fake-quant nodes,
  same calibration statistics), so onnxruntime reproduces the point's fidelity figures. A channel-pruned
  plan's graph then has its zeroed channels removed (`structured_export.prune_proto`: the same outputs to
  float rounding, fewer parameters and MACs; what stayed dense and why in the manifest).
* "real" → the config's preferred deployable kind (`RuntimeSupport.preferred`), or any kind by name:
  real-int8-weights (int8/uint8 initializers + DequantizeLinear, bit-exact with the simulation),
  real-int8-dynamic (quantize_dynamic), real-int8-qdq (quantize_static on the calibration feeds),
  fp16 (onnxruntime.transformers.float16, float32 inputs and outputs kept), real-matmulnbits
  (group-wise 4/8-bit MatMul/Gemm weights packed by onnxruntime's MatMulNBitsQuantizer, `export_nbits`;
  it raises `NothingToQuantize` for a graph without MatMul/Gemm weights). Prune / low-rank stages
  are applied first in float (they are part of every kind).

A torch golden model is compressed in torch (`compress_module`: compressed weights, output transforms
as forward hooks) and that module is exported with torch.onnx.export (dynamo, falling back to the
TorchScript exporter, as `exporters.export_onnx`; one input, one output). Exporting the compressed
module — not compressing an export of the golden one — matters: the exporter folds batch norms into
the preceding convolutions, so the ONNX graph's weights are not the weights the simulation quantized.
For the same reason real-int8-weights converts only the weights that reach the ONNX file unchanged
(by parameter name; a folded or re-laid-out weight stays float, and the manifest notes it).
Models with several inputs or outputs, or that the exporter cannot trace, raise EngineError: export them
to ONNX yourself and sweep the ONNX file.

This module chooses the kind and writes the manifest; the graphs come from `export_onnx` (ONNX golden
model; int8 weights; dead-node pruning), `export_torch` (torch golden model) and `export_converters`
(onnxruntime's fp16 / dynamic / QDQ converters); `export_common` holds what they share.

How closely a simulated export reproduces its point: for an ONNX golden model it is the same graph in
the same runtime (equal to float precision). For a torch golden model the file runs in onnxruntime, not
torch: weight-only configs agree to about 1e-7 relative in KL, but with activation quantization tiny
kernel differences move some values across a rounding step, and the effect grows with depth (digits CNN
w8+a8: identical; EfficientNet-Lite0 w8+a8 on 16 images: KL 0.0224 in torch, 0.0218 in the export).

Manifest keys: format, file, kind, point_id, config (to_dict or None), plan (layer → to_dict, for
per-layer plans), source_sha256 (+ source_sha256_of), file_sha256, file_size_bytes, size_bytes
(computed, `cost`), size_bytes_fp32, matches_simulation, quantization (the converter's settings),
structured_pruning (channel-pruned plans: `structured_export.prune_proto`'s record, else None),
metrics: {"simulated": the point's fidelity or None, "measured": the file run in onnxruntime against the
golden model, or None without eval feeds}, onnxruntime_version, opset, notes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.compression import Calibration, CompressibleModel, Config, WeightQuant
from worker.engine.compression.model import Feeds, resolve
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import FidelityParams, bind_inputs, compare_models
from worker.engine.sweep.cost import model_cost
from worker.engine.sweep.export_common import (
    Builder,
    file_bytes,
    file_opset,
    ort_runner,
    save_proto,
    sha256_file,
)
from worker.engine.sweep.export_converters import dynamic, fp16, qdq
from worker.engine.sweep.export_nbits import NBITS_KIND, matmul_nbits
from worker.engine.sweep.export_onnx import int8_weights, onnx_builder
from worker.engine.sweep.export_torch import torch_builder
from worker.engine.sweep.golden import GoldenReference, SweepPoint, fidelity_summary, json_safe, point_spec
from worker.engine.sweep.runtime_forms import (
    EXACT_KINDS,
    EXPORT_KINDS,
    ExportKind,
    float_part,
    last_weight_quant,
    runtime_support,
)
from worker.engine.sweep.structured_export import has_channel_prune, prune_proto

if TYPE_CHECKING:
    import onnx

__all__ = ["MANIFEST_FORMAT", "export_point", "ort_runner"]

MANIFEST_FORMAT = "kneeboard-sweep-export/1"


def _builder(golden: CompressibleModel, calibration: Calibration, notes: list[str]) -> Builder:
    """How to build the simulated ONNX graph of a plan for this golden model."""
    from worker.engine.compression.onnx_backend import OnnxCompressible

    if isinstance(golden, OnnxCompressible):
        return onnx_builder(golden, calibration)
    notes.append("compressed in torch and exported with torch.onnx.export")
    return torch_builder(golden, calibration, calibration.feeds)


def _source_digest(golden: CompressibleModel) -> tuple[str, str]:
    proto = getattr(golden, "model", None)
    if golden.backend == "onnx" and proto is not None:
        return hashlib.sha256(proto.SerializeToString()).hexdigest(), "serialized ONNX ModelProto"
    return golden.weights_digest(), "Kneeboard weights digest (no model file)"


def export_point(
    golden: CompressibleModel,
    config_or_plan: Any,
    out_dir: Path,
    *,
    kind: str = "simulated",
    calibration: Calibration | Feeds | None = None,
    calibration_feeds: Feeds | None = None,
    eval_feeds: Feeds | None = None,
    labels: np.ndarray | None = None,
    point: SweepPoint | None = None,
    reference: GoldenReference | None = None,
    batch_size: int = 64,
    source_sha256: str | None = None,
    fidelity_params: FidelityParams | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Write a runnable ONNX file of a point and its manifest (see the module docstring).

    kind: "simulated", "real" (the config's preferred deployable kind) or an ExportKind.
    calibration / calibration_feeds: activation statistics (a Calibration of `golden`) or feeds, for
    activation configs and real-int8-qdq; without them the evaluation feeds calibrate (noted).
    eval_feeds (+ labels): run the file in onnxruntime and store its measured fidelity against the
    golden model (`reference`: golden outputs already computed on those feeds). point: the evaluated
    point, whose fidelity is stored as the simulated metrics. source_sha256: the golden file's sha256
    when the caller knows it (else a digest of the loaded model). fidelity_params: how the file is compared
    (the point's task and its options; default: batch_size alone).
    """
    notes: list[str] = []
    if calibration is None:
        calibration = calibration_feeds
    if calibration is None and eval_feeds is not None:
        calibration = eval_feeds
        notes.append("calibrated on the evaluation feeds")
    if calibration is None:
        raise EngineError("export_point needs calibration or evaluation feeds (a sample input at least)")
    calib = (
        calibration
        if isinstance(calibration, Calibration)
        else Calibration(golden, bind_inputs(calibration, golden.inputs), batch_size)
    )
    if calib.model is not golden:
        raise EngineError("the calibration was computed on another model")
    spec = point_spec(golden, config_or_plan)
    support = runtime_support(spec.plan, [layer.name for layer in golden.layers()])
    chosen = _choose_kind(kind, spec.plan, support.real_kinds)
    notes.insert(
        0,
        "simulated: compressed weights in float32, fake-quant / cast nodes after layer outputs"
        if chosen == "simulated-float"
        else f"{chosen}: " + "; ".join(support.notes),
    )
    build = _builder(golden, calib, notes)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{_slug(spec.id)}.{chosen}.onnx"
    quantization: dict[str, Any] = {}
    structured: dict[str, Any] | None = None
    prune = has_channel_prune(spec.plan)

    def physically_pruned(proto: onnx.ModelProto) -> onnx.ModelProto:
        nonlocal structured
        if prune:
            structured = prune_proto(proto, calib.feeds)
            notes.append(_structured_note(structured))
        return proto

    if chosen in ("fp32", "simulated-float"):
        save_proto(physically_pruned(build(spec.plan)), path)
    elif chosen == "real-int8-weights":
        proto = build(spec.plan)
        quantization = int8_weights(proto, golden.layers(), golden.read, spec.plan, notes)
        if prune:
            notes.append(
                "channels are not removed from the int8-weights form (its integers are matched to the weights "
                "by name and shape); the simulated-float export is the physically pruned one"
            )
        save_proto(proto, path)
    else:
        float_plan = {name: part for name, config in spec.plan.items() if (part := float_part(config))}
        base = physically_pruned(build(float_plan))
        config = next(iter(spec.plan.values()))
        if chosen == NBITS_KIND:
            quantization = matmul_nbits(base, path, _final_weights(config), notes)
        elif chosen == "fp16":
            quantization = fp16(base, path)
        elif chosen == "real-int8-dynamic":
            quantization = dynamic(base, path, config)
        else:
            quantization = qdq(base, path, config, calib.feeds, calib.batch_size, notes)
    cost = model_cost(golden, spec.plan, resolve(golden, spec.plan, calib)[0].tensors)
    source, source_of = (source_sha256, "file") if source_sha256 else _source_digest(golden)
    measured = None
    if eval_feeds is not None:
        if reference is None or reference.batch_size != batch_size or reference.model is not golden:
            reference = GoldenReference(golden, eval_feeds, batch_size)
        runner = ort_runner(path)
        try:
            params = fidelity_params or FidelityParams(batch_size=batch_size)
            report = compare_models(reference, runner, eval_feeds, labels, params)
        finally:
            runner.close()
        measured = fidelity_summary(report)
    import onnxruntime

    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "file": path.name,
        "kind": chosen,
        "point_id": spec.id,
        **{k: v for k, v in spec.to_dict().items() if k != "id"},
        "source_sha256": source,
        "source_sha256_of": source_of,
        "file_sha256": sha256_file(path),
        "file_size_bytes": file_bytes(path),
        "size_bytes": cost.size_bytes,
        "size_bytes_fp32": cost.size_bytes_fp32,
        "matches_simulation": chosen in EXACT_KINDS,
        "quantization": quantization,
        "structured_pruning": structured,
        "metrics": {"simulated": None if point is None else point.fidelity, "measured": measured},
        "onnxruntime_version": onnxruntime.__version__,
        "opset": file_opset(path),
        "notes": notes,
    }
    manifest = json_safe(manifest)
    path.with_suffix(".json").write_text(json.dumps(manifest, indent=2, allow_nan=False))
    return path, manifest


def _structured_note(structured: Mapping[str, Any]) -> str:
    if not structured["applied"]:
        return (
            "channel pruning: no channel could be removed from the graph (see structured_pruning.left_dense)"
        )
    return (
        f"channel pruning: zeroed channels removed from the graph ({structured['params_dense']} → "
        f"{structured['params']} parameters, {structured['macs_dense']} → {structured['macs']} MACs per sample; "
        f"{len(structured['left_dense'])} layer(s) left dense, see structured_pruning)"
    )


def _choose_kind(kind: str, plan: Mapping[str, Config], real: tuple[ExportKind, ...]) -> ExportKind:
    simulated: ExportKind = "fp32" if not plan else "simulated-float"
    if kind == "simulated":
        return simulated
    if kind == "real":
        if not real:
            raise EngineError(
                "this configuration has no real runtime form (see runtime_support); export 'simulated'"
            )
        return real[0]
    if kind not in EXPORT_KINDS:
        raise EngineError(
            f"unknown export kind {kind!r}; expected simulated, real or one of {list(EXPORT_KINDS)}"
        )
    if kind != simulated and kind not in real:
        raise EngineError(f"{kind} is not available for this configuration; available: {[simulated, *real]}")
    return kind


def _final_weights(config: Config) -> WeightQuant:
    found = last_weight_quant(config)
    if found is None:
        raise EngineError(f"{config.id} has no final weight quantization")
    return found[1]


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:120]
