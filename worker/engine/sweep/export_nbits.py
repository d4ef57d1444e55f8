"""The real-matmulnbits export kind: group-wise 4- or 8-bit weights packed by ONNX Runtime's own quantizer
(`onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer`), run by its MatMulNBits kernels.

What becomes MatMulNBits: every MatMul whose second input is a constant 2-D weight [K, N] (or N-D with unit
leading dimensions), quantized in blocks of `block_size` consecutive weights along K for each of the N
output columns, one scale per block (and a packed zero point when asymmetric). The installed quantizer
(onnxruntime 1.32) handles MatMul and Gather only, so a Gemm with a constant B, transA = 0 and alpha = 1 is
first rewritten here as MatMul(A, B or Bᵀ) + beta·C (the same product; torch's Linear on 2-D inputs and
vision classifiers export as Gemm). Everything else — Conv, ConvTranspose, recurrent layers, a MatMul of two
activations — stays float32 and is listed in the manifest (`quantization.left_float`, with the reason).

Algorithms (only those the installed version runs without extra packages): "rtn" — round to nearest,
`DefaultWeightOnlyQuantConfig` (MLAS's C++ blockwise quantizer); "hqq" — Half-Quadratic Quantization
(`HQQWeightOnlyQuantConfig`, no calibration data, always asymmetric with float zero points, 4 bits).
onnxruntime's "RTN" and "GPTQ" configs call Intel Neural Compressor, which is not installed here: not offered.

ORT's grid is not the simulation's: symmetric blocks use q ∈ [−8, 7] with scale = (the block's signed
value of largest magnitude) / −8, stored as q + 8 (MLAS `range2scale`), where the simulation
(`ops.fake_quant_weight_groups`) uses the narrow q ∈ [−7, 7], scale = max|w| / 7. Asymmetric blocks use the
same convention on both sides ([min(w, 0), max(w, 0)] over 2^b − 1 steps, integer zero point). So the file is
close to the simulation, not bit-equal (matches_simulation is false; its own fidelity is measured).

MatMulNBits takes any K (the last block is zero-padded) but its block size must be a power of two ≥ 16
(`BLOCK_SIZES`, enforced by `WeightQuant`'s validation)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from worker.engine.compression.configs import WeightQuant
from worker.engine.errors import EngineError
from worker.engine.sweep.export_common import save_proto

if TYPE_CHECKING:
    import onnx

NBITS_KIND = "real-matmulnbits"
NBITS_BITS = (4, 8)
"""Widths exported to MatMulNBits (the quantizer also packs 2 bits; not offered: untested here)."""
Algorithm = Literal["rtn", "hqq"]
ALGORITHMS: tuple[Algorithm, ...] = ("rtn", "hqq")
WEIGHT_OPS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul", "LSTM", "GRU", "RNN", "Einsum", "Gather"})
"""Op types whose constant input is a layer's weight: the ones not converted are listed as left float."""


class NothingToQuantize(EngineError):
    """The graph has no MatMul / Gemm with a constant weight: MatMulNBits has nothing to pack."""


@contextmanager
def _quiet() -> Iterator[None]:
    """The quantizer logs two INFO lines per node and warnings about opsets on its own logger."""
    logger = logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():  # HQQ wraps a read-only numpy array in a tensor it only reads
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            yield
    finally:
        logger.setLevel(previous)


def _constants(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    return {init.name: init for init in graph.initializer}


def gemm_to_matmul(proto: onnx.ModelProto) -> list[str]:
    """Rewrite each Gemm(A, B, C) with a constant B, transA = 0 and alpha = 1 as MatMul(A, B') (+ Add of
    beta·C), B' = Bᵀ when transB, in place; returns the names of the rewritten nodes. Gemm's A is 2-D, and
    MatMul of a 2-D A by a 2-D B' is the same product."""
    from onnx import helper, numpy_helper

    graph = proto.graph
    consts = _constants(graph)
    rewritten: list[str] = []
    nodes: list[onnx.NodeProto] = []
    for index, node in enumerate(graph.node):
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        has_bias = len(node.input) > 2 and bool(node.input[2])
        beta = float(attrs.get("beta", 1.0))
        if (
            node.op_type != "Gemm"
            or node.domain not in ("", "ai.onnx")
            or node.input[1] not in consts
            or int(attrs.get("transA", 0)) != 0
            or float(attrs.get("alpha", 1.0)) != 1.0
            or (has_bias and beta != 1.0 and node.input[2] not in consts)
        ):
            nodes.append(node)
            continue
        name = node.name or f"gemm_{index}"
        b = numpy_helper.to_array(consts[node.input[1]])
        weight = np.ascontiguousarray(b.T if int(attrs.get("transB", 0)) else b)
        w_name = f"{node.input[1]}__matmul"
        graph.initializer.append(numpy_helper.from_array(weight, w_name))
        product = f"{node.output[0]}__matmul" if has_bias else node.output[0]
        nodes.append(helper.make_node("MatMul", [node.input[0], w_name], [product], name=name))
        if has_bias:
            bias = node.input[2]
            if beta != 1.0:
                scaled = numpy_helper.to_array(consts[bias]) * np.float32(beta)
                bias = f"{bias}__beta"
                graph.initializer.append(numpy_helper.from_array(scaled.astype(np.float32), bias))
            nodes.append(helper.make_node("Add", [product, bias], [node.output[0]], name=f"{name}__bias"))
        rewritten.append(name)
    del graph.node[:]
    graph.node.extend(nodes)
    used = {i for node in graph.node for i in node.input}
    for init in [i for i in graph.initializer if i.name not in used]:
        graph.initializer.remove(init)
    return rewritten


def _name_nodes(graph: onnx.GraphProto) -> None:
    """The quantizer names its nodes after the original ones (and excludes by name): give every node one."""
    taken = {node.name for node in graph.node if node.name}
    for index, node in enumerate(graph.node):
        if not node.name:
            name = f"{node.op_type.lower()}_{index}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)


def _algo_config(wq: WeightQuant, algorithm: Algorithm, accuracy_level: int | None, notes: list[str]) -> Any:
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        HQQWeightOnlyQuantConfig,
    )

    assert wq.group_size is not None
    if algorithm == "hqq":
        if wq.bits != 4:
            raise EngineError(f"HQQ export is 4-bit only here; the config has {wq.bits} bits")
        if wq.symmetric:
            notes.append("HQQ is asymmetric (optimised float zero points): the symmetric setting is not used")
        return HQQWeightOnlyQuantConfig(block_size=wq.group_size, bits=4, op_types_to_quantize=("MatMul",))
    return DefaultWeightOnlyQuantConfig(
        block_size=wq.group_size,
        is_symmetric=wq.symmetric,
        bits=wq.bits,
        accuracy_level=accuracy_level,
        op_types_to_quantize=("MatMul",),
    )


def _embedding_gathers(graph: onnx.GraphProto) -> list[str]:
    """Gather nodes that read rows of a constant 2-D float32 table (embeddings), not shape constants."""
    from onnx import TensorProto

    consts = _constants(graph)
    return [
        node.name
        for node in graph.node
        if node.op_type == "Gather"
        and node.domain in ("", "ai.onnx")
        and node.input[0] in consts
        and consts[node.input[0]].data_type == TensorProto.FLOAT
        and len(consts[node.input[0]].dims) == 2
        and not any(a.name == "axis" and a.i != 0 for a in node.attribute)
    ]


def _int4_types_allowed(proto: onnx.ModelProto) -> None:
    """GatherBlockQuantized stores int4 tensors: IR version 10 and opset 21, as the quantizer itself does
    when asked for every Gather (it bumps without checking; only the embedding Gathers are passed here)."""
    proto.ir_version = max(proto.ir_version, 10)
    for opset in proto.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version < 21:
            opset.version = 21


def _left_float(graph: onnx.GraphProto, converted: set[str]) -> list[str]:
    consts = _constants(graph)
    tables = set(_embedding_gathers(graph))
    left = []
    for node in graph.node:
        if node.op_type not in WEIGHT_OPS or node.domain not in ("", "ai.onnx") or node.name in converted:
            continue
        if not any(i in consts for i in node.input):
            continue  # no constant input: not a layer with weights (e.g. attention scores Q·Kᵀ)
        if node.op_type == "Gather":
            if node.name in tables:
                left.append(f"{node.name} (Gather): an embedding table; packed only with embeddings=True")
            continue  # a Gather of shapes or indices, not a layer
        if node.op_type == "MatMul":
            reason = "its weight is not 2-D (or has non-unit batch dimensions)"
        elif node.op_type == "Gemm":
            reason = "transA, alpha ≠ 1 or a computed C scaled by beta: not rewritten as MatMul"
        else:
            reason = "MatMulNBits packs MatMul weights only"
        left.append(f"{node.name} ({node.op_type}): {reason}")
    return left


def matmul_nbits(
    base: onnx.ModelProto,
    path: Path,
    wq: WeightQuant,
    notes: list[str],
    algorithm: Algorithm = "rtn",
    accuracy_level: int | None = None,
    embeddings: bool = False,
) -> dict[str, Any]:
    """Quantize the MatMul / Gemm weights of `base` (a float graph) with MatMulNBitsQuantizer and write the
    file to `path`; returns the quantizer's settings for the manifest. Raises NothingToQuantize when the
    graph has no MatMul or Gemm with a constant weight, EngineError for a config MatMulNBits cannot hold.
    embeddings (round to nearest, 4 bits): also pack the Gathers of constant float tables (embeddings) into
    GatherBlockQuantized, blocks along each row; the model's opset is raised to 21 for their int4 tensors. Off
    in sweeps (an opset change is not what a point should carry silently); the bench measures it."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    if wq.group_size is None or wq.bits not in NBITS_BITS:
        raise EngineError(
            f"{NBITS_KIND} needs group-wise weights (group_size set) of {' or '.join(map(str, NBITS_BITS))} bits; "
            f"got {wq.id}"
        )
    if algorithm not in ALGORITHMS:
        raise EngineError(f"unknown MatMulNBits algorithm {algorithm!r}; expected one of {list(ALGORITHMS)}")
    proto = onnx.ModelProto()
    proto.CopyFrom(base)
    _name_nodes(proto.graph)
    gemms = gemm_to_matmul(proto)
    before = {node.name: node.op_type for node in proto.graph.node}
    config = _algo_config(wq, algorithm, accuracy_level, notes)
    gathers: list[str] = []
    if embeddings:
        if algorithm != "rtn" or wq.bits != 4:
            raise EngineError("embedding Gathers are packed by round to nearest at 4 bits only")
        gathers = _embedding_gathers(proto.graph)
        if gathers:
            _int4_types_allowed(proto)
    with _quiet():
        quantizer = MatMulNBitsQuantizer(proto, algo_config=config, nodes_to_include=gathers or None)
        quantizer.process()
    out: onnx.ModelProto = quantizer.model.model
    suffix = f"_Q{wq.bits}"
    converted = sorted(
        n.name[: -len(suffix)]
        for n in out.graph.node
        if n.op_type == "MatMulNBits" and n.name.endswith(suffix)
    )
    packed_gathers = sorted(
        n.name[: -len(suffix)]
        for n in out.graph.node
        if n.op_type == "GatherBlockQuantized" and n.name.endswith(suffix)
    )
    left = _left_float(out.graph, set(converted) | set(packed_gathers))
    if not converted:
        ops = sorted({op for op in before.values() if op in WEIGHT_OPS})
        raise NothingToQuantize(
            "no MatMul/Gemm layers to quantize: MatMulNBits packs the constant weights of MatMul (and Gemm) "
            f"nodes, and this graph's weight layers are {', '.join(ops) or 'none'}; the point is simulated only"
        )
    save_proto(out, path)
    notes.append(
        f"{len(converted)} MatMul/Gemm layer(s) packed to {wq.bits}-bit MatMulNBits (blocks of {wq.group_size} "
        f"along K, {'HQQ' if algorithm == 'hqq' else 'round to nearest'}); {len(left)} weight layer(s) left "
        "float32 (quantization.left_float)"
    )
    if gemms:
        notes.append(f"{len(gemms)} Gemm node(s) rewritten as MatMul (+ Add) for the quantizer")
    return {
        "method": "onnxruntime.quantization.matmul_nbits_quantizer.MatMulNBitsQuantizer",
        "algorithm": "HQQWeightOnlyQuantConfig"
        if algorithm == "hqq"
        else "DefaultWeightOnlyQuantConfig (RTN)",
        "bits": wq.bits,
        "block_size": wq.group_size,
        "symmetric": wq.symmetric and algorithm == "rtn",
        "accuracy_level": accuracy_level,
        "weights": converted,
        "left_float": left,
        "gemm_rewritten": gemms,
        "embeddings": packed_gathers,
    }
