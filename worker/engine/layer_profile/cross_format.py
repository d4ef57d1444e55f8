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

import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

_CALL = re.compile(r"@(\d+)$")


def call_name(key: str, path: str) -> str:
    """Layer name of the call an nn_module_stack entry describes: 'relu' for 'L__self__relu', 'relu#2' for
    'L__self__relu@1'."""
    match = _CALL.search(key)
    return path if match is None else f"{path}#{int(match.group(1)) + 1}"


def torch_call_outputs(program: torch.export.ExportedProgram, leaves: Collection[str]) -> dict[str, str]:
    """Layer name of each call of a leaf module -> the name of the last fx node that ran in it."""
    last: dict[str, str] = {}
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        stack = node.meta.get("nn_module_stack") or {}
        if not stack:
            continue
        key, (path, _) = list(stack.items())[-1]
        path = ".".join(_CALL.sub("", part) for part in str(path).split("."))
        if path in leaves:
            last[call_name(str(key), path)] = node.name
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
