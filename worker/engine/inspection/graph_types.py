"""The display graph's records (nodes, edges, the graph), shared by the ONNX (graph.py) and torch.export
(torch_graph.py) builders."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

NodeKind = Literal["op", "input", "output"]


@dataclass(frozen=True)
class GraphNode:
    id: str
    kind: NodeKind
    op_type: str
    aliases: list[str] = field(default_factory=list)
    module_path: str | None = None
    group_path: list[str] = field(default_factory=list)
    quantized: bool = False
    params: int = 0
    macs: int | None = None


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    tensor: str
    quantized: bool = False


@dataclass(frozen=True)
class ModelGraph:
    format: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "nodes": [asdict(node) for node in self.nodes],
            "edges": [asdict(edge) for edge in self.edges],
            "notes": list(self.notes),
        }


def group_path(module_path: str | None) -> list[str]:
    if not module_path:
        return []
    parts = module_path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def module_op_node(display: str, fields: Mapping[str, Any]) -> GraphNode:
    """The op node of a torch graph (torch.export or TorchScript) from what its builder gathered: op_type,
    module (path or None), aliases (repeats and the id itself dropped), params and, where known, macs."""
    module = fields["module"]
    return GraphNode(
        id=display,
        kind="op",
        op_type=fields["op_type"],
        aliases=[a for a in dict.fromkeys(fields["aliases"]) if a != display],
        module_path=module,
        group_path=group_path(module),
        params=fields["params"],
        macs=fields.get("macs"),
    )


class DisplayIds:
    """Display ids, unique: a wanted id already taken gets the first free '#k'."""

    def __init__(self, reserved: set[str]) -> None:
        self.taken = set(reserved)

    def fresh(self, base: str) -> str:
        name, count = base, 1
        while name in self.taken:
            count += 1
            name = f"{base}#{count}"
        self.taken.add(name)
        return name
