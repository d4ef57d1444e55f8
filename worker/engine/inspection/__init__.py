"""What a model is made of: inputs, outputs, parameter-owning layers, parameter count, MACs and FLOPs.

Conventions (the same for every format, so that a golden model and its compressed version compare):

* MACs count the multiply-accumulates of matrix-like ops only - convolutions, matrix products, dense
  layers and recurrent cells - as torch.utils.flop_counter.FlopCounterMode does; element-wise ops,
  activations, pooling and bias additions count 0. FLOPs = 2 * MACs.
* MACs are for one forward pass at `input_shapes_used`: the shapes passed in, or else the model's
  declared shapes with a symbolic batch dimension set to 1. When a dimension is still unknown, MACs and
  FLOPs are None and a note names the input that needs a declared shape.
* A layer is a unit that owns parameters (ONNX: a node; torch: a module), plus, for torch, every leaf
  module. Per-layer MACs are None where the runtime cannot attribute them (TorchScript).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from worker.engine.errors import ModelLoadError
from worker.engine.inspection.files import readable_model
from worker.engine.inspection.graph import ModelGraph, display_graph
from worker.engine.inspection.model import LayerInfo, ModelInspection
from worker.engine.inspection.onnx_macs import _onnx_macs as _onnx_macs
from worker.engine.inspection.onnx_side import _onnx_params as _onnx_params
from worker.engine.inspection.onnx_side import inspect_onnx
from worker.engine.inspection.shapes import resolve_input_shapes
from worker.engine.inspection.torch_side import _count_flops as _count_flops
from worker.engine.inspection.torch_side import inspect_torch_export, inspect_torchscript
from worker.engine.types import ModelFormat

__all__ = ["LayerInfo", "ModelInspection", "inspect_model", "inspect_with_graph", "resolve_input_shapes"]


def inspect_model(
    path: Path, fmt: ModelFormat, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> ModelInspection:
    """Inspect a model file; raises ModelLoadError when it cannot be read and EngineError when
    `input_shapes` names an input the model does not have or contradicts a fixed dimension."""
    if fmt == "onnx_zip":
        with readable_model(path, fmt) as (onnx_path, _):
            return inspect_onnx(onnx_path, input_shapes)
    path = Path(path)
    if fmt == "onnx":
        return inspect_onnx(path, input_shapes)
    if fmt == "torch_export":
        return inspect_torch_export(path, input_shapes)
    if fmt == "torchscript":
        return inspect_torchscript(path, input_shapes)
    raise ModelLoadError(
        f"Unknown model format {fmt!r}; expected onnx, onnx_zip, torch_export or torchscript."
    )


def inspect_with_graph(
    path: Path, fmt: ModelFormat, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> tuple[ModelInspection, ModelGraph]:
    """`inspect_model` and `graph.display_graph` of one model file, reading it once: an onnx_zip is
    extracted once for both (the inspect job needs both)."""
    with readable_model(path, fmt) as (readable, readable_fmt):
        inspection = inspect_model(readable, readable_fmt, input_shapes)
        return inspection, display_graph(readable, readable_fmt, input_shapes, inspection)
