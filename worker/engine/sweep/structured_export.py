"""A channel-pruned point's export made physically smaller, and the point's cost made the file's.

`prune_proto` runs `export_pruned.remove_zero_channels` on a float ONNX graph and measures it before and
after: parameters (the inspection's rule, `_onnx_params`: the same count as the cost's other_params),
MACs per sample (`onnx_shape_facts` at one sample's input shapes) and serialized bytes. `real_cost`
rewrites a point's cost with those measured differences: params_kept = params_total − parameters the
file lost, macs_effective − MACs it lost (bops_effective scaled alike), and, for a float32 plan,
size_bytes − 4 bytes per parameter lost. A plan that also quantizes keeps its computed size_bytes (the
removed parameters' width depends on the layer; noted); the manifest's file_size_bytes is the real file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.compression.configs import ChannelPrune, Config, stages_of
from worker.engine.sweep.cost import storage_of
from worker.engine.sweep.cost_records import FLOAT_BITS
from worker.engine.sweep.export_pruned import StructuredPruning, remove_zero_channels

if TYPE_CHECKING:
    import onnx


def has_channel_prune(plan: Mapping[str, Config]) -> bool:
    return any(isinstance(stage, ChannelPrune) for config in plan.values() for stage in stages_of(config))


def sample_shapes(feeds: Mapping[str, np.ndarray]) -> dict[str, list[int]]:
    """One sample's input shapes (batch 1) from feeds named after the model inputs."""
    return {name: [1, *[int(d) for d in np.shape(value)[1:]]] for name, value in feeds.items()}


def _measure(proto: onnx.ModelProto, shapes: Mapping[str, list[int]]) -> tuple[int, int | None, int]:
    from worker.engine.inspection.onnx_macs import onnx_shape_facts
    from worker.engine.inspection.onnx_side import _onnx_params

    _, params, _ = _onnx_params(proto.graph)
    macs = onnx_shape_facts(proto, dict(shapes)).macs
    total = None if macs is None or any(m is None for m in macs) else sum(m or 0 for m in macs)
    return int(params), total, proto.ByteSize()


def prune_proto(proto: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Remove the zeroed channels of `proto` in place; what was removed, what stays dense and why, and the
    parameters / MACs per sample / serialized bytes before and after.

    A safety net over the pass: the pruned graph must compute the dense graph's outputs on the first two
    rows of `feeds` (onnxruntime, within 1e-4 of the outputs' scale); if it does not, or the pass fails
    unexpectedly, `proto` is restored dense and the record says why (never a wrong file)."""
    import onnx

    shapes = sample_shapes(feeds)
    params_dense, macs_dense, bytes_dense = _measure(proto, shapes)
    dense = onnx.ModelProto()
    dense.CopyFrom(proto)
    try:
        report = remove_zero_channels(proto)
        problem = _differs(dense, proto, feeds) if report.pruned else None
    except Exception as exc:  # a graph the pass mishandles must not break the export: keep it dense
        report, problem = StructuredPruning(), f"the channel pruner failed ({type(exc).__name__}: {exc})"
    if problem is not None:
        proto.CopyFrom(dense)
        report = StructuredPruning(
            left_dense=[{"layer": "(whole graph)", "zero_channels": 0, "reason": problem}]
        )
    params, macs, size = _measure(proto, shapes) if report.pruned else (params_dense, macs_dense, bytes_dense)
    return {
        "applied": bool(report.pruned),
        "params_dense": params_dense,
        "params": params,
        "macs_dense": macs_dense,
        "macs": macs,
        "bytes_dense": bytes_dense,
        "bytes": size,
        **report.to_dict(),
    }


def _differs(dense: onnx.ModelProto, pruned: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> str | None:
    """Why the pruned graph is not the dense one on a sample, or None when their outputs agree."""
    import onnxruntime as ort

    sample = {name: np.ascontiguousarray(value[:2]) for name, value in feeds.items()}
    outputs = []
    for model in (dense, pruned):
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        names = {i.name for i in session.get_inputs()}
        outputs.append(session.run(None, {k: v for k, v in sample.items() if k in names}))
    for a, b in zip(*outputs, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return f"the pruned graph's output shape {b.shape} is not the dense graph's {a.shape}; kept dense"
        if a.dtype.kind == "f":
            diff = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
            if not diff <= 1e-4 * max(1.0, float(np.max(np.abs(a))) if a.size else 1.0):
                return f"the pruned graph's outputs differ from the dense graph's by {diff:.3g}; kept dense"
        elif not np.array_equal(a, b):
            return "the pruned graph's integer outputs differ from the dense graph's; kept dense"
    return None


def real_cost(
    cost: dict[str, Any], plan: Mapping[str, Config], structured: Mapping[str, Any]
) -> dict[str, Any]:
    """The point's cost (`ModelCost.to_dict()`) with the physically pruned file's measured differences."""
    out = dict(cost)
    lost = int(structured["params_dense"]) - int(structured["params"])
    out["params_kept_simulated"] = cost.get("params_kept")
    out["params_kept"] = int(cost["params_total"]) - lost
    notes = list(cost.get("notes") or [])
    macs_dense, macs = structured.get("macs_dense"), structured.get("macs")
    if cost.get("macs_effective") is not None and macs_dense is not None and macs is not None:
        before = int(cost["macs_effective"])
        out["macs_effective"] = max(before - (int(macs_dense) - int(macs)), 0)
        if cost.get("bops_effective") is not None and before:
            out["bops_effective"] = round(int(cost["bops_effective"]) * out["macs_effective"] / before)
    float_plan = all(storage_of(config).weight_bits == FLOAT_BITS for config in plan.values())
    if float_plan:
        out["size_bytes"] = int(cost["size_bytes"]) - 4 * lost
        out["compression_ratio"] = (
            int(cost["size_bytes_fp32"]) / out["size_bytes"] if out["size_bytes"] else None
        )
    else:
        notes.append("channels removed from a quantized plan: size_bytes is still the computed dense size")
    left = len(structured.get("left_dense") or [])
    notes.append(
        f"channel pruning removed {lost} parameters and {(macs_dense or 0) - (macs or 0)} MACs per sample from "
        f"the exported file (params_kept, macs_effective{', size_bytes' if float_plan else ''} "
        f"are the file's){f'; {left} layer(s) left dense, see structured_pruning' if left else ''}"
    )
    out["notes"] = notes
    out["structured_pruning"] = dict(structured)
    return out
