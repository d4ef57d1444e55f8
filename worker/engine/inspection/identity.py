"""One identity per layer: a canonical id (the source module path when the model carries it, else the node
name) and every alias a user may meet it under elsewhere (ONNX node name, output tensor names, parameter
tensor names, torch module path).

The dynamo ONNX exporter (torch.onnx.export(dynamo=True)) writes each node's module scopes into its
metadata_props: ``pkg.torch.onnx.name_scopes`` = "['', 'encoder.layer.0', ..., 'encoder.layer.0.attention.
self.query', 'linear']" - the root, each enclosing module's full path, then the op's own fx name. The
innermost module path (the one before the op name) is the canonical id: the name torch users, the
sensitivity scan (torch module paths) and the fidelity profile then share."""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"
_CALL_SUFFIX = re.compile(r"@\d+$")  # the k-th call of a module ("relu@1"), as in compression's names
_CALL_INDEX = re.compile(r"@(\d+)$")


def name_scopes(node: onnx.NodeProto) -> list[str] | None:
    """The dynamo exporter's scope list of `node` (root '', module paths..., op name); None without one."""
    raw = next((prop.value for prop in node.metadata_props if prop.key == NAME_SCOPES_KEY), None)
    if raw is None:
        return None
    try:
        scopes = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
        return None
    return scopes


def onnx_module_path(node: onnx.NodeProto) -> str | None:
    """The torch module path of `node` as the dynamo exporter recorded it; None when the node carries none,
    or sits directly in the root module (e.g. a flatten in forward()).

    The same rule as the sensitivity scan's layer names (compression/onnx_backend._scope), so that both
    name a layer alike - including a Conv the exporter folded a BatchNorm into, which keeps the
    BatchNorm's scope ('_bn0' in EfficientNet-Lite0; its weight, '_conv_stem.weight', is an alias)."""
    scopes = name_scopes(node)
    parts = [_CALL_SUFFIX.sub("", scope) for scope in (scopes or [])[1:-1] if scope]
    if not parts:
        return None
    nested = all(b.startswith(a + ".") for a, b in itertools.pairwise(parts))
    return parts[-1] if nested else ".".join(parts)


def module_call(meta: Mapping[str, object]) -> tuple[str, int]:
    """(module path, call index) of the innermost module a torch.export fx node ran in, from its
    ``nn_module_stack`` metadata: the path without '@k' parts, the index from the entry's key ('relu@1' is
    the second call, index 1); ('', 0) in the root module."""
    stack = meta.get("nn_module_stack") or {}
    if not isinstance(stack, Mapping) or not stack:
        return "", 0
    key, (path, _) = list(stack.items())[-1]
    if str(path).startswith("_empty_nn_module_stack"):
        return "", 0
    match = _CALL_INDEX.search(str(key))
    name = ".".join(_CALL_SUFFIX.sub("", part) for part in str(path).split("."))
    return name, int(match.group(1)) if match else 0


def node_label(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def canonical_onnx_ids(graph: onnx.GraphProto, indices: Iterable[int]) -> dict[int, str]:
    """Canonical id per node index: its module path (onnx_module_path), else its node name; a module path
    shared by several of these nodes gets '#2', '#3'... from its second node on (graph order), so that
    ids stay unique."""
    ids: dict[int, str] = {}
    seen: dict[str, int] = {}
    for index in indices:
        node = graph.node[index]
        base = onnx_module_path(node) or node_label(node, index)
        count = seen.get(base, 0) + 1
        seen[base] = count
        ids[index] = base if count == 1 else f"{base}#{count}"
    return ids


def onnx_aliases(node: onnx.NodeProto, index: int, canonical: str, params: Iterable[str] = ()) -> list[str]:
    """Every other name the layer goes by: node name, output tensors, module path, parameter tensors."""
    scopes = name_scopes(node) or []
    module = scopes[-2] if len(scopes) >= 2 else ""
    names = [node_label(node, index), *[o for o in node.output if o], module, *params]
    out: list[str] = []
    for name in names:
        if name and name != canonical and name not in out:
            out.append(name)
    return out


def alias_index(layers: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """Alias (or canonical id) -> canonical id over stored inspection layers; the canonical id wins a clash."""
    index: dict[str, str] = {}
    rows = list(layers)
    for row in rows:
        for alias in row.get("aliases") or []:  # type: ignore[attr-defined]
            index.setdefault(str(alias), str(row["name"]))
    for row in rows:
        index[str(row["name"])] = str(row["name"])
    return index
