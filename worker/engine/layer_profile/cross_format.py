"""torch.export golden vs ONNX compressed: which ONNX tensor is a torch layer's output.

The torch side names a layer by its module call: the module path for its first call, ``path#2``, ``path#3``
for later calls (torch_side.py; the ids inspection and the graph view give them). torch's dynamo ONNX
exporter names each tensor after the fx node that made it, and the exported program records which module
call ran each fx node (the innermost ``nn_module_stack`` entry, whose key ends in ``@k`` for the k+1-th
call). So a module call's output is the tensor named after the call's last fx node, in the ONNX model
exported from the same program and in a quantized copy of it (onnxruntime's quantizer keeps tensor names;
where it fused the op away, e.g. a Conv's pre-activation in a Conv+ReLU, there is no such tensor and the
layer stays unmatched, as between two ONNX models). The program's user outputs pair with the ONNX graph
outputs in order (the exporter renames those). A model exported some other way matches across formats only
through a name map."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from worker.engine.inspection.identity import module_call

if TYPE_CHECKING:
    import torch


def torch_call_outputs(program: torch.export.ExportedProgram, leaves: Collection[str]) -> dict[str, str]:
    """Layer name of each call of a leaf module -> the name of the last fx node that ran in it."""
    last: dict[str, str] = {}
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        path, call = module_call(node.meta)
        if path in leaves:
            last[path if call == 0 else f"{path}#{call + 1}"] = node.name
    return last


def cross_format_targets(
    call_outputs: Mapping[str, str],
    program_outputs: Sequence[str],
    onnx_tensors: Collection[str],
    onnx_outputs: Sequence[str],
) -> dict[str, str]:
    """torch layer name -> the ONNX tensor of the same name (the call's last fx node), or the ONNX graph
    output in the place of the program's user output that the call makes; layers with neither are left out."""
    renamed = dict(zip(program_outputs, onnx_outputs, strict=False))
    tensors = set(onnx_tensors)
    out: dict[str, str] = {}
    for layer, fx_name in call_outputs.items():
        if fx_name in tensors:
            out[layer] = fx_name
        elif fx_name in renamed and renamed[fx_name] in tensors:
            out[layer] = renamed[fx_name]
    return out
