"""The display graph of a torch.export program (.pt2), in the same shape as the ONNX one (graph.py).

* One node per call of a leaf module (a module with no submodules: Conv2d, ReLU, Linear...): the fx ops it
  ran are folded into it, as Model Explorer draws a torch layer. Its id is the module path, the layer id
  inspection gives it (so the model page, the fidelity profile and the scans name it alike); a module called
  again (one ReLU used twice) gets '#2', '#3'... for the later calls, as the ONNX graph names repeated
  module calls, so the graph stays acyclic.
* Ops that run directly in a module with submodules (torch.flatten in the root's forward) are nodes of
  their own, named by the fx node ('flatten'), prefixed with that module's path when it is not the root.
* Parameters and buffers are not nodes: a node owns the parameters it reads (counted once, on first use),
  with the layer's MACs from inspection on the module's first call.
* Edges follow the fx data flow between those nodes; the program's user inputs and outputs are the
  'input:' / 'output:' nodes (named as the loader names them: the fx node names).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from worker.engine.inspection.graph_types import DisplayIds, GraphEdge, GraphNode, ModelGraph, module_op_node
from worker.engine.inspection.identity import module_call
from worker.engine.inspection.model import LayerInfo, ModelInspection

if TYPE_CHECKING:
    import torch

_CALL = re.compile(r"@(\d+)$")


def _module_calls(program: torch.export.ExportedProgram) -> tuple[set[str], dict[str, str]]:
    """(leaf module paths, module path -> class name) over every node's nn_module_stack."""
    types: dict[str, str] = {}
    for node in program.graph.nodes:
        for path, module_type in (node.meta.get("nn_module_stack") or {}).values():
            if str(path).startswith("_empty_nn_module_stack"):
                continue
            name = ".".join(_CALL.sub("", part) for part in str(path).split("."))
            types.setdefault(name, getattr(module_type, "__name__", str(module_type)).rsplit(".", 1)[-1])
    leaves = {name for name in types if name and not any(o.startswith(f"{name}.") for o in types)}
    return leaves, types


def _reads_own_weight(node: torch.fx.Node, module: str, weights: Mapping[str, str]) -> bool:
    return any(weights.get(source.name, "").rsplit(".", 1)[0] == module for source in node.all_input_nodes)


def torch_export_graph(program: torch.export.ExportedProgram, inspection: ModelInspection) -> ModelGraph:
    from torch.export.graph_signature import InputKind

    leaves, types = _module_calls(program)
    layers: Mapping[str, LayerInfo] = {layer.name: layer for layer in inspection.layers}
    state: Mapping[str, Any] = program.state_dict
    signature = program.graph_signature
    user_inputs = {s.arg.name for s in signature.input_specs if s.kind == InputKind.USER_INPUT}
    weights = {
        s.arg.name: s.target
        for s in signature.input_specs
        if s.kind in (InputKind.PARAMETER, InputKind.BUFFER) and s.target is not None
    }
    ids = DisplayIds(set(leaves))
    group_of: dict[str, str] = {name: f"input:{name}" for name in user_inputs}  # fx node -> display id
    call_ids: dict[tuple[str, int], str] = {}
    nodes = [GraphNode(id=f"input:{name}", kind="input", op_type="Input") for name in sorted(user_inputs)]
    info: dict[str, dict[str, Any]] = {}  # display id -> fields of its GraphNode, in first-seen order
    counted: set[str] = set()
    edges: list[GraphEdge] = []
    linked: set[tuple[str, str]] = set()
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        module, call = module_call(node.meta)
        if module in leaves:
            display = call_ids.get((module, call))
            if display is None:
                display = module if call == 0 else ids.fresh(module)
                call_ids[(module, call)] = display
            op_type = types[module]
        elif module in layers and module not in info and _reads_own_weight(node, module, weights):
            display = module  # a module with submodules that also owns parameters: its layer id
            ids.taken.add(module)
            op_type = types.get(module, "Module")
        else:
            display = ids.fresh(f"{module}.{node.name}" if module else node.name)
            op_type = str(getattr(node.target, "__name__", node.target)).split(".")[0]
        group_of[node.name] = display
        if display not in info:
            layer = layers.get(display)
            info[display] = {"op_type": op_type, "module": module or None, "aliases": [], "params": 0}
            info[display]["macs"] = layer.macs if layer is not None else None
        fields = info[display]
        fields["aliases"].append(node.name)
        for source in node.all_input_nodes:
            if source.name in weights:
                target = weights[source.name]
                if target not in counted and hasattr(state.get(target), "numel"):
                    counted.add(target)
                    fields["params"] += int(state[target].numel())
                    fields["aliases"].append(target)
                continue
            origin = group_of.get(source.name)
            if origin is not None and origin != display and (origin, display) not in linked:
                linked.add((origin, display))
                edges.append(GraphEdge(origin, display, source.name))
    nodes.extend(module_op_node(display, fields) for display, fields in info.items())
    output = next(node for node in program.graph.nodes if node.op == "output")
    returned = output.args[0] if isinstance(output.args[0], (list, tuple)) else [output.args[0]]
    user_outputs = set(signature.user_outputs)
    for value in returned:
        name = getattr(value, "name", None)
        if name is None or name not in user_outputs:
            continue
        out_id = f"output:{name}"
        nodes.append(GraphNode(id=out_id, kind="output", op_type="Output"))
        origin = group_of.get(name)
        if origin is not None:
            edges.append(GraphEdge(origin, out_id, name))
    return ModelGraph(format="torch_export", nodes=nodes, edges=edges, notes=[])
