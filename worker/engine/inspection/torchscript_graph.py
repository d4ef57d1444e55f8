"""The display graph of a TorchScript module (.pt, traced or scripted), in the same shape as the ONNX and
torch.export ones (graph.py, torch_graph.py).

TorchScript keeps each module's code as its own IR graph, and a module calls a submodule with
`prim::CallMethod` on a `prim::GetAttr` of itself. The builder walks the root's forward from the top:

* A call of a leaf module (no submodules: Conv2d, ReLU, Linear...) is one node, as Model Explorer draws a
  torch layer. Its id is the module path, the layer id inspection gives it; a later call of the same module
  gets '#2', '#3'... (a traced module's second call is a second method, `forward1`), as the ONNX and
  torch.export graphs name repeated module calls, so the graph stays acyclic.
* A call of a module with submodules is walked into (its method's own graph, the caller's values bound to
  its inputs), so a Sequential or a residual block is drawn as the calls it makes.
* Ops with a tensor output that run directly in a module's code (aten::add of a skip connection,
  aten::flatten) are nodes of their own, named by the op ('flatten'), prefixed with that module's path when it
  is not the root; an op reading a parameter of a module with submodules is that module's layer node.
  Ops without a tensor output (constants, sizes, list and tuple plumbing) are not nodes: their outputs carry
  their inputs' producers on.
* Parameters and buffers (GetAttr of a tensor) are not nodes; a node owns the parameters it reads, counted
  once, and has their names as aliases (TorchScript's value names, '9', 'input0.1', mean nothing to a user). TorchScript runs submodules inside its interpreter, so per-layer MACs are unknown (None), as in
  inspection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from worker.engine.inspection.graph_types import DisplayIds, GraphEdge, GraphNode, ModelGraph, module_op_node


def _tensor(value: Any) -> bool:
    return bool(value.type().kind() == "TensorType")


class _Builder:
    def __init__(self, root: Any) -> None:
        self.modules: dict[str, Any] = dict(root.named_modules())
        self.leaves = {p for p, m in self.modules.items() if p and not any(True for _ in m.children())}
        self.types = {p: str(getattr(m, "original_name", type(m).__name__)) for p, m in self.modules.items()}
        self.tensors: dict[str, int] = {name: int(t.numel()) for name, t in root.named_parameters()}
        self.tensors |= {name: int(t.numel()) for name, t in root.named_buffers()}
        self.own = {p: bool(dict(m.named_parameters(recurse=False))) for p, m in self.modules.items()}
        self.nodes: dict[str, dict[str, Any]] = {}  # display id -> GraphNode fields, in first-seen order
        self.ids = DisplayIds(set(self.leaves))
        self.calls: dict[str, int] = {}
        self.counted: set[str] = set()
        self.edges: list[GraphEdge] = []
        self.linked: set[tuple[str, str]] = set()

    def node(self, display: str, op_type: str, module: str | None) -> dict[str, Any]:
        return self.nodes.setdefault(
            display, {"op_type": op_type, "module": module, "aliases": [], "params": 0}
        )

    def link(self, sources: set[str], target: str, tensor: str) -> None:
        for source in sorted(sources):
            if source != target and (source, target) not in self.linked:
                self.linked.add((source, target))
                self.edges.append(GraphEdge(source, target, tensor))

    def own_params(self, display: str, names: Sequence[str]) -> None:
        for name in names:
            if name in self.tensors and name not in self.counted:
                self.counted.add(name)
                self.nodes[display]["params"] += self.tensors[name]
                self.nodes[display]["aliases"].append(name)

    def walk(self, base: str, graph: Any, args: Sequence[set[str]]) -> list[set[str]]:
        """Add the nodes of one module method's graph, its (non-self) inputs produced by `args`; the
        producers of what it returns."""
        inputs = list(graph.inputs())
        modules: dict[str, str] = {inputs[0].debugName(): base}  # value -> module path
        weights: dict[str, str] = {}  # value -> parameter / buffer name
        producers: dict[str, set[str]] = {}
        for value, produced in zip(inputs[1:], args, strict=False):
            producers[value.debugName()] = produced
        returned: list[set[str]] = []
        for n in graph.nodes():
            kind = n.kind()
            ins = list(n.inputs())
            outs = list(n.outputs())
            if kind == "prim::GetAttr" and ins[0].debugName() in modules:
                owner = modules[ins[0].debugName()]
                path = f"{owner}.{n.s('name')}" if owner else n.s("name")
                if path in self.modules:
                    modules[outs[0].debugName()] = path
                else:
                    weights[outs[0].debugName()] = path
                continue
            if kind == "prim::CallMethod" and ins[0].debugName() in modules:
                target = modules[ins[0].debugName()]
                call_args = [producers.get(v.debugName(), set()) for v in ins[1:]]
                if target in self.leaves:
                    self.calls[target] = self.calls.get(target, 0) + 1
                    display = target if self.calls[target] == 1 else self.ids.fresh(target)
                    self.node(display, self.types[target], target)
                    if self.calls[target] == 1:
                        self.own_params(
                            display, [name for name in self.tensors if name.startswith(f"{target}.")]
                        )
                    for value, produced in zip(ins[1:], call_args, strict=True):
                        self.link(produced, display, value.debugName())
                    result = [{display}] * len(outs)
                else:
                    method = self.modules[target]._c._get_method(n.s("name"))
                    inner = self.walk(target, method.graph, call_args)
                    result = [set().union(*inner)] * len(outs) if inner else [set() for _ in outs]
                for value, produced in zip(outs, result, strict=True):
                    producers[value.debugName()] = produced
                continue
            sources = [producers.get(v.debugName(), set()) for v in ins]
            read = [weights[v.debugName()] for v in ins if v.debugName() in weights]
            if not any(_tensor(o) for o in outs):  # plumbing: carry the producers on
                merged: set[str] = set().union(*sources) if sources else set()
                for value in outs:
                    producers[value.debugName()] = merged
                continue
            op = kind.split("::", 1)[-1]
            if base and self.own.get(base) and base not in self.leaves and read and base not in self.nodes:
                display = base  # a module with submodules that computes with its own parameters: its layer
                self.ids.taken.add(base)
                self.node(display, self.types.get(base, "Module"), base)
            else:
                display = self.ids.fresh(f"{base}.{op}" if base else op)
                self.node(display, op, base or None)
            self.own_params(display, read)
            for value, produced in zip(ins, sources, strict=True):
                self.link(produced, display, value.debugName())
            for value in outs:
                producers[value.debugName()] = {display}
        for value in graph.return_node().inputs():
            source = value.node()
            if source.kind() == "prim::TupleConstruct":  # forward returns a tuple: one output each
                returned.extend(producers.get(v.debugName(), set()) for v in source.inputs())
            else:
                returned.append(producers.get(value.debugName(), set()))
        return returned


def torchscript_graph(
    module: Any, input_names: Sequence[str], output_names: Sequence[str] | None
) -> ModelGraph:
    """The graph of a loaded TorchScript module; `input_names` name its tensor inputs in order (the runner's
    input specs), `output_names` its outputs (None: 'output', or 'output_i' for a tuple)."""
    builder = _Builder(module)
    graph = module._c._get_method("forward").graph
    tensor_inputs = [v for v in list(graph.inputs())[1:] if _tensor(v)]
    names = list(input_names) + [v.debugName() for v in tensor_inputs[len(input_names) :]]
    args: list[set[str]] = []
    nodes = []
    tensor_index = 0
    for value in list(graph.inputs())[1:]:
        if _tensor(value):
            node_id = f"input:{names[tensor_index]}"
            tensor_index += 1
            nodes.append(GraphNode(id=node_id, kind="input", op_type="Input"))
            args.append({node_id})
        else:
            args.append(set())
    returned = builder.walk("", graph, args)
    nodes.extend(module_op_node(display, fields) for display, fields in builder.nodes.items())
    edges = list(builder.edges)
    if output_names is None or len(output_names) != len(returned):
        output_names = ["output"] if len(returned) == 1 else [f"output_{i}" for i in range(len(returned))]
    for name, produced in zip(output_names, returned, strict=True):
        out_id = f"output:{name}"
        nodes.append(GraphNode(id=out_id, kind="output", op_type="Output"))
        edges.extend(GraphEdge(source, out_id, name) for source in sorted(produced))
    return ModelGraph(format="torchscript", nodes=nodes, edges=edges, notes=[])
