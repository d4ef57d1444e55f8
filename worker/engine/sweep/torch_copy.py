"""Private copies of torch golden models that can be changed and exported.

A torch.export program runs as `torch.export.unflatten(program)`; that module's graphs carry fake tensors
with symbolic sizes in their nodes' meta (copy.deepcopy fails on them) and its input/output pytree handling
is not traceable by torch.onnx.export. `private_copy` copies with empty metas, `materialize` swaps its
one-op submodules (aten conv / linear / relu) for the equivalent nn modules, and `plain_module` turns the
unflattened module into an fx GraphModule over the same graph and submodules (same parameter names).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import nn


def private_copy(module: nn.Module) -> nn.Module:
    """A deep copy in eval mode. The graphs of a torch.export.unflatten module carry fake tensors with
    symbolic sizes in their nodes' meta, which cannot be deep-copied: the copy gets empty metas (running
    the graph does not read them)."""
    memo: dict[int, Any] = {}
    for sub in module.modules():
        graph = getattr(sub, "graph", None)
        if isinstance(graph, torch.fx.Graph):
            for node in graph.nodes:
                memo[id(node.meta)] = {}
    return copy.deepcopy(module, memo).eval()


def plain_module(module: nn.Module) -> nn.Module:
    """A torch.export.unflatten module as an fx GraphModule over the same graph and submodules: an ordinary
    python module that torch.onnx.export can trace (the unflattened module's input/output pytree handling
    and symbolic shape metadata cannot be), returning its one output."""
    graph = getattr(module, "graph", None)
    if type(module).__name__ != "UnflattenedModule" or not isinstance(graph, torch.fx.Graph):
        return module
    outputs = [node for node in graph.nodes if node.op == "output"]
    returned = outputs[0].args[0] if outputs else None
    if isinstance(returned, tuple | list) and len(returned) == 1:
        outputs[0].args = (returned[0],)
    return torch.fx.GraphModule(module, graph).eval()


_CONVS = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}


def _single_op(sub: nn.Module) -> Any:
    """The one call_function node of an InterpreterModule (torch.export.unflatten), or None."""
    graph = getattr(sub, "graph", None)
    if type(sub).__name__ != "InterpreterModule" or graph is None:
        return None
    calls = [node for node in graph.nodes if node.op not in ("placeholder", "get_attr", "output")]
    return calls[0] if len(calls) == 1 and calls[0].op == "call_function" else None


def materialize(module: nn.Module) -> list[str]:
    """Replace, in place, the submodules of a torch.export.unflatten module that compute one aten conv,
    linear or relu by the equivalent nn.Conv*/nn.Linear/nn.ReLU holding the same parameters, so that the
    methods see ordinary layers (their type, stride and padding); returns the names replaced."""
    aten = torch.ops.aten
    replaced: list[str] = []
    for name, sub in list(module.named_modules()):
        node = _single_op(sub)
        if node is None or not name:
            continue
        target = node.target
        new: nn.Module | None = None
        weight, bias = getattr(sub, "weight", None), getattr(sub, "bias", None)
        if target == aten.relu.default:
            new = nn.ReLU()
        elif target == aten.linear.default and isinstance(weight, torch.Tensor):
            new = nn.Linear(weight.shape[1], weight.shape[0], bias=isinstance(bias, torch.Tensor))
        elif target in (aten.conv1d.default, aten.conv2d.default, aten.conv3d.default) and isinstance(
            weight, torch.Tensor
        ):
            dims = weight.dim() - 2
            args = list(node.args) + [None] * (7 - len(node.args))
            stride, padding, dilation, groups = (
                args[3] or [1] * dims,
                args[4] or [0] * dims,
                args[5] or [1] * dims,
                args[6] or 1,
            )
            conv: Any = _CONVS[dims]
            new = conv(
                weight.shape[1] * groups,
                weight.shape[0],
                tuple(weight.shape[2:]),
                stride=tuple(stride),
                padding=tuple(padding) if not isinstance(padding, str) else padding,
                dilation=tuple(dilation),
                groups=groups,
                bias=isinstance(bias, torch.Tensor),
            )
        if new is None:
            continue
        if isinstance(new, nn.Linear | nn.Conv1d | nn.Conv2d | nn.Conv3d):
            assert isinstance(weight, torch.Tensor)
            with torch.no_grad():
                new.weight.copy_(weight)
                if isinstance(bias, torch.Tensor) and new.bias is not None:
                    new.bias.copy_(bias)
        parent_name, _, child = name.rpartition(".")
        setattr(module.get_submodule(parent_name) if parent_name else module, child, new.eval())
        replaced.append(name)
    return replaced
