"""Response body of GET /models/{id}/graph: the model's compute graph for the graph view."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, Field


class GraphNodeOut(BaseModel):
    id: str = Field(
        description="Canonical layer id (module path when the model records it, else the node name): the "
        "name the model page, the fidelity profile and sensitivity scans use. 'input:<name>' / "
        "'output:<name>' for the graph's inputs and outputs."
    )
    kind: Literal["op", "input", "output"]
    op_type: str = Field(description="ONNX op type, e.g. Conv, Gemm, MatMul; Input / Output.")
    aliases: list[str] = Field(description="Other names of the node: node name, output tensors, parameters.")
    module_path: str | None = Field(description="Torch module path recorded by the exporter; null without.")
    group_path: list[str] = Field(
        description="Dotted prefixes of module_path, outermost first: the groups a viewer may collapse."
    )
    quantized: bool = Field(
        description="Fed through QDQ (DequantizeLinear) plumbing, which is folded into the node, or a "
        "QLinear*/Integer op."
    )
    params: int = Field(description="Parameters the node owns (counted as inspection does).")
    macs: int | None = Field(description="Multiply-accumulates per forward pass; null when unknown.")


class GraphEdgeOut(BaseModel):
    source: str = Field(description="Producing node id.")
    target: str = Field(description="Consuming node id.")
    tensor: str = Field(description="The tensor the consumer reads.")
    quantized: bool = Field(description="The tensor passes through folded Quantize/DequantizeLinear nodes.")


class ModelGraphOut(BaseModel):
    model_id: uuid.UUID
    format: str = Field(description="The model's format; only ONNX models have nodes.")
    nodes: list[GraphNodeOut] = Field(description="Graph order (a topological order for ONNX).")
    edges: list[GraphEdgeOut]
    notes: list[str] = Field(description="Why the graph is empty or what is unknown (e.g. MACs).")
