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

import math
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.loaders import TorchRunner, extract_onnx_zip, load_model
from worker.engine.types import Dim, ModelFormat, TensorSpec

if TYPE_CHECKING:
    import onnx
    import torch


@dataclass(frozen=True)
class LayerInfo:
    name: str
    type: str
    params: int
    macs: int | None


@dataclass(frozen=True)
class ModelInspection:
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    layers: list[LayerInfo]
    total_params: int
    macs: int | None
    flops: int | None
    input_shapes_used: dict[str, list[int]] | None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data (lists, dicts, str, int, None)."""
        return {
            "inputs": [spec.to_dict() for spec in self.inputs],
            "outputs": [spec.to_dict() for spec in self.outputs],
            "layers": [asdict(layer) for layer in self.layers],
            "total_params": self.total_params,
            "macs": self.macs,
            "flops": self.flops,
            "input_shapes_used": self.input_shapes_used,
            "notes": list(self.notes),
        }


def inspect_model(
    path: Path, fmt: ModelFormat, input_shapes: Mapping[str, Sequence[int]] | None = None
) -> ModelInspection:
    """Inspect a model file; raises ModelLoadError when it cannot be read and EngineError when
    `input_shapes` names an input the model does not have or contradicts a fixed dimension."""
    path = Path(path)
    if fmt == "onnx":
        return _inspect_onnx(path, input_shapes)
    if fmt == "onnx_zip":
        with tempfile.TemporaryDirectory(prefix="kneeboard-inspect-") as tmp:
            return _inspect_onnx(extract_onnx_zip(path, Path(tmp)), input_shapes)
    if fmt == "torch_export":
        return _inspect_torch_export(path, input_shapes)
    if fmt == "torchscript":
        return _inspect_torchscript(path, input_shapes)
    raise ModelLoadError(
        f"Unknown model format {fmt!r}; expected onnx, onnx_zip, torch_export or torchscript."
    )


# ------------------------------------------------------------------------------------- input shapes


def resolve_input_shapes(
    inputs: Sequence[TensorSpec], given: Mapping[str, Sequence[int]] | None
) -> tuple[dict[str, list[int]] | None, list[str]]:
    """Concrete shapes for every input, or None (with notes saying which input lacks one)."""
    given = dict(given or {})
    unknown_names = sorted(set(given) - {spec.name for spec in inputs})
    if unknown_names:
        raise EngineError(
            f"input_shapes names {unknown_names}, which are not inputs of the model "
            f"({[spec.name for spec in inputs]})."
        )
    shapes: dict[str, list[int]] = {}
    notes: list[str] = []
    for spec in inputs:
        if spec.name in given:
            shapes[spec.name] = _checked_given_shape(spec, given[spec.name])
            continue
        shape, note = _declared_shape(spec)
        if shape is None:
            notes.append(note)
        else:
            shapes[spec.name] = shape
    if len(shapes) < len(inputs):
        return None, notes
    batches = {shape[0] for shape in shapes.values() if shape}
    if batches - {1}:
        notes.append(f"MACs and FLOPs are for a batch of {sorted(batches)} samples, not one sample.")
    return shapes, notes


def _checked_given_shape(spec: TensorSpec, shape: Sequence[int]) -> list[int]:
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise EngineError(f"input_shapes[{spec.name!r}] = {dims} has a negative size.")
    if spec.shape and len(spec.shape) != len(dims):
        raise EngineError(
            f"input_shapes[{spec.name!r}] = {dims} has rank {len(dims)}, but the model declares "
            f"{list(spec.shape)} (rank {len(spec.shape)})."
        )
    for declared, wanted in zip(spec.shape, dims, strict=False):
        if isinstance(declared, int) and declared != wanted:
            raise EngineError(
                f"input_shapes[{spec.name!r}] = {dims} contradicts the declared shape {list(spec.shape)}."
            )
    return dims


def _declared_shape(spec: TensorSpec) -> tuple[list[int] | None, str]:
    if not spec.shape:
        return None, (
            f"Input {spec.name!r} has no declared shape (rank unknown); declare it "
            f"(input_shapes) to get MACs/FLOPs."
        )
    dims = [d if isinstance(d, int) else (1 if axis == 0 else None) for axis, d in enumerate(spec.shape)]
    if any(d is None for d in dims):
        unknown = [axis for axis, d in enumerate(dims) if d is None]
        return None, (
            f"Input {spec.name!r} has unknown sizes on axes {unknown} of {list(spec.shape)}; declare its "
            f"shape (input_shapes) to get MACs/FLOPs."
        )
    return [int(d) for d in dims if d is not None], ""


# --------------------------------------------------------------------------------------------- ONNX

# Inputs that hold shapes, indices, axes or quantization scales / zero points: constants, not weights.
_META_INPUTS: dict[str, frozenset[int]] = {
    op: frozenset(positions)
    for ops, positions in [
        (("Reshape", "Expand", "Tile", "Upsample", "Squeeze", "Unsqueeze", "TopK", "Split", "CumSum"), {1}),
        (("Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements", "OneHot"), {1}),
        (("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2"), {1}),
        (("ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"), {1}),
        (("Slice",), {1, 2, 3, 4}),
        (("Pad", "Resize"), {1, 2, 3}),
        (("Clip",), {1, 2}),
        (("ConstantOfShape",), {0}),
        (("Range",), {0, 1, 2}),
        (("QuantizeLinear", "DequantizeLinear"), {1, 2}),
        (("QLinearConv", "QLinearMatMul"), {1, 2, 4, 5, 6, 7}),
        (("MatMulInteger", "ConvInteger"), {2, 3}),
    ]
    for op in ops
}

# Ops a weight may pass through on its way to the layer that uses it (QDQ: weight -> DequantizeLinear
# -> Conv; an exported LSTM's recurrence weight -> Slice (per gate) -> Concat -> LSTM).
_WEIGHT_PASS_THROUGH = frozenset(
    {
        "DequantizeLinear",
        "QuantizeLinear",
        "Identity",
        "Cast",
        "Transpose",
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Slice",
        "Split",
        "Concat",
    }
)

_NON_PARAM_DTYPES = frozenset({"int64", "bool", "str", "object"})  # shapes, indices, masks, strings

ShapeMap = dict[str, tuple[int | None, ...]]


def _inspect_onnx(model_path: Path, input_shapes: Mapping[str, Sequence[int]] | None) -> ModelInspection:
    model = _read_onnx(model_path)
    graph = model.graph
    initializer_names = {init.name for init in graph.initializer}
    inputs = [_onnx_spec(value) for value in graph.input if value.name not in initializer_names]
    outputs = [_onnx_spec(value) for value in graph.output]
    shapes_used, notes = resolve_input_shapes(inputs, input_shapes)
    node_params, total_params, param_notes = _onnx_params(graph)
    node_macs, mac_notes = _onnx_macs(model, shapes_used)
    notes += param_notes + mac_notes + _onnx_structure_notes(graph)
    layers = [
        LayerInfo(_node_name(node, i), node.op_type, node_params[i], node_macs[i] if node_macs else None)
        for i, node in enumerate(graph.node)
        if node_params.get(i)
    ]
    macs = _sum_or_none(node_macs) if node_macs else None
    return ModelInspection(
        inputs=inputs,
        outputs=outputs,
        layers=layers,
        total_params=total_params,
        macs=macs,
        flops=None if macs is None else 2 * macs,
        input_shapes_used=shapes_used,
        notes=notes,
    )


def _read_onnx(path: Path) -> onnx.ModelProto:
    """Parse the protobuf without its external data (only dims are needed), except small external
    tensors such as Reshape targets, which shape inference needs the values of. Inlines local functions."""
    import onnx
    import onnx.inliner
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    try:
        model = onnx.load(str(path), load_external_data=False)
        for tensor in model.graph.initializer:
            if uses_external_data(tensor) and math.prod(tensor.dims) <= 64:
                load_external_data_for_tensor(tensor, str(path.parent))
    except Exception as exc:  # DecodeError, OSError, ValueError: all mean the file is unusable
        raise ModelLoadError(f"onnx could not load {path.name}: {exc}") from exc
    if not model.graph.output or not model.graph.node:
        raise ModelLoadError(
            f"onnx parsed {path.name} but found no graph (no nodes or no outputs); is it an ONNX model?"
        )
    if model.functions:
        model = onnx.inliner.inline_local_functions(model)
    return model


def _onnx_spec(value: onnx.ValueInfoProto) -> TensorSpec:
    from onnx import helper

    tensor_type = value.type.tensor_type
    try:
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type).name
    except (KeyError, ValueError, TypeError):
        dtype = value.type.WhichOneof("value") or "unknown"
    shape: tuple[Dim, ...] = ()
    if tensor_type.HasField("shape"):
        shape = tuple(_onnx_dim(dim) for dim in tensor_type.shape.dim)
    return TensorSpec(value.name, shape, dtype)


def _onnx_dim(dim: onnx.TensorShapeProto.Dimension) -> Dim:
    if dim.HasField("dim_value"):
        return int(dim.dim_value)
    return dim.dim_param or None


def _node_name(node: onnx.NodeProto, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def _onnx_params(graph: onnx.GraphProto) -> tuple[dict[int, int], int, list[str]]:
    """Parameters per node index, the total, and notes.

    An initializer is a parameter unless it is integer-typed index/shape data (int64, bool) or every
    use is a shape / index / axes / quantization scale / zero-point input (see _META_INPUTS). So a QDQ
    model's int8 weights and int32 biases count, their scales and zero points do not. A parameter
    belongs to the node that consumes it, followed through DequantizeLinear, Transpose, Slice,
    Concat... while each step has a single consumer: a QDQ Conv owns its int8 weight, not the
    DequantizeLinear. An initializer used along several paths belongs to the node they all lead to,
    or else to the first path's node; it is counted once either way. A one-element initializer that
    only feeds Expand is a fill value (torch.zeros(...) exported), not a parameter. Other constants
    folded into initializers by an exporter cannot be told apart from trained weights and are counted.
    """
    consumers = _consumers(graph)
    per_node: dict[int, int] = {}
    total = 0
    orphan = 0
    for init in graph.initializer:
        data_uses = _data_uses(graph, init, consumers.get(init.name, []))
        if data_uses is None:
            continue
        size = math.prod(init.dims)
        total += size
        if not data_uses:
            orphan += size
            continue
        owners = [_weight_owner(graph, index, consumers) for index, _ in data_uses]
        owner = owners[0]  # all paths agree, or the first path wins
        per_node[owner] = per_node.get(owner, 0) + size
    notes = [f"{orphan} parameters are in initializers no node uses."] if orphan else []
    return per_node, total, notes


def _data_uses(
    graph: onnx.GraphProto, init: onnx.TensorProto, uses: list[tuple[int, int]]
) -> list[tuple[int, int]] | None:
    """The uses of `init` as data, or None when it is not a parameter at all (see _onnx_params)."""
    from onnx import helper

    dtype = helper.tensor_dtype_to_np_dtype(init.data_type).name if init.data_type else "unknown"
    data_uses = [(i, pos) for i, pos in uses if pos not in _META_INPUTS.get(graph.node[i].op_type, ())]
    if dtype in _NON_PARAM_DTYPES or (uses and not data_uses):
        return None
    if (
        math.prod(init.dims) == 1
        and data_uses
        and all(graph.node[i].op_type == "Expand" for i, _ in data_uses)
    ):
        return None
    return data_uses


def _consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[int, int]]]:
    """Value name -> (node index, input position) of every use in the main graph."""
    uses: dict[str, list[tuple[int, int]]] = {}
    for index, node in enumerate(graph.node):
        for position, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append((index, position))
    return uses


def _weight_owner(graph: onnx.GraphProto, index: int, consumers: Mapping[str, list[tuple[int, int]]]) -> int:
    graph_outputs = {value.name for value in graph.output}
    seen = {index}
    while graph.node[index].op_type in _WEIGHT_PASS_THROUGH and len(graph.node[index].output) == 1:
        produced = graph.node[index].output[0]
        uses = consumers.get(produced, [])
        if len(uses) != 1 or produced in graph_outputs or uses[0][0] in seen:
            break
        index = uses[0][0]
        seen.add(index)
    return index


def _onnx_structure_notes(graph: onnx.GraphProto) -> list[str]:
    from onnx import AttributeProto

    notes = []
    subgraph_ops = sorted(
        {
            node.op_type
            for node in graph.node
            if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute)
        }
    )
    if subgraph_ops:
        notes.append(f"Nodes inside {subgraph_ops} subgraphs are not counted (parameters or MACs).")
    constants = [node for node in graph.node if node.op_type == "Constant"]
    constant_elements = sum(_constant_size(node) for node in constants)
    if constant_elements > len(constants):
        notes.append(f"Constant nodes hold {constant_elements} values; they are not counted as parameters.")
    return notes


def _constant_size(node: onnx.NodeProto) -> int:
    return sum(math.prod(a.t.dims) for a in node.attribute if a.name == "value")


def _onnx_macs(
    model: onnx.ModelProto, shapes_used: Mapping[str, list[int]] | None
) -> tuple[list[int | None] | None, list[str]]:
    """MACs per node (0 for ops without a MAC rule), or None when the input shapes are unknown."""
    import onnx

    if shapes_used is None:
        return None, []
    typed = onnx.ModelProto()
    typed.CopyFrom(model)
    _set_input_shapes(typed.graph, shapes_used)
    try:
        inferred = onnx.shape_inference.infer_shapes(typed, strict_mode=False, data_prop=True)
    except Exception as exc:  # InferenceError and friends: report it, do not fail the inspection
        return [None] * len(model.graph.node), [f"ONNX shape inference failed, MACs unknown: {exc}"]
    shapes = _known_shapes(inferred.graph)
    macs: list[int | None] = []
    unknown: list[str] = []
    for index, node in enumerate(model.graph.node):
        rule = _MAC_RULES.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        value = rule(node, shapes) if rule else 0
        if value is None:
            unknown.append(f"{_node_name(node, index)} ({node.op_type})")
        macs.append(value)
    notes = [f"MACs unknown for {unknown}: shape inference gave no complete shapes."] if unknown else []
    return macs, notes


def _set_input_shapes(graph: onnx.GraphProto, shapes: Mapping[str, list[int]]) -> None:
    del graph.value_info[:]  # stale symbolic shapes; inference recomputes them from the concrete inputs
    for value in graph.input:
        if value.name not in shapes:
            continue
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for size in shapes[value.name]:
            dims.add().dim_value = size


def _known_shapes(graph: onnx.GraphProto) -> ShapeMap:
    shapes: ShapeMap = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        tensor_type = value.type.tensor_type
        if tensor_type.HasField("shape"):
            shapes[value.name] = tuple(
                int(d.dim_value) if d.HasField("dim_value") else None for d in tensor_type.shape.dim
            )
    for init in graph.initializer:
        shapes[init.name] = tuple(int(d) for d in init.dims)
    return shapes


def _full_shape(
    shapes: ShapeMap, node: onnx.NodeProto, position: int, output: bool = False
) -> list[int] | None:
    names = node.output if output else node.input
    if position >= len(names) or not names[position]:
        return None
    shape = shapes.get(names[position])
    if shape is None or any(d is None for d in shape):
        return None
    return [int(d) for d in shape if d is not None]


def _conv_rule(weight_position: int) -> Callable[[onnx.NodeProto, ShapeMap], int | None]:
    """Conv-like: every output element takes (Cin / groups) * prod(kernel) MACs = prod(W.shape[1:])."""

    def rule(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
        out = _full_shape(shapes, node, 0, output=True)
        weight = _full_shape(shapes, node, weight_position)
        if out is None or weight is None:
            return None
        return math.prod(out) * math.prod(weight[1:])

    return rule


def _conv_transpose_macs(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
    """Every input element is scattered through (Cout / groups) * prod(kernel) weights."""
    x = _full_shape(shapes, node, 0)
    weight = _full_shape(shapes, node, 1)
    if x is None or weight is None:
        return None
    return math.prod(x) * math.prod(weight[1:])


def _matmul_rule(a_position: int) -> Callable[[onnx.NodeProto, ShapeMap], int | None]:
    """MatMul-like: every output element is a dot product over A's last axis."""

    def rule(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
        out = _full_shape(shapes, node, 0, output=True)
        a = _full_shape(shapes, node, a_position)
        if out is None or a is None or not a:
            return None
        return math.prod(out) * a[-1]

    return rule


def _gemm_macs(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
    out = _full_shape(shapes, node, 0, output=True)
    a = _full_shape(shapes, node, 0)
    if out is None or a is None or len(a) != 2:
        return None
    trans_a = next((attr.i for attr in node.attribute if attr.name == "transA"), 0)
    return math.prod(out) * (a[0] if trans_a else a[1])


def _rnn_macs(node: onnx.NodeProto, shapes: ShapeMap) -> int | None:
    """RNN / GRU / LSTM: per step and sample, every gate multiplies x by W and h by R."""
    x = _full_shape(shapes, node, 0)
    w = _full_shape(shapes, node, 1)
    r = _full_shape(shapes, node, 2)
    if x is None or w is None or r is None or len(x) != 3:
        return None
    layout = next((attr.i for attr in node.attribute if attr.name == "layout"), 0)
    seq, batch = (x[1], x[0]) if layout else (x[0], x[1])
    return seq * batch * (math.prod(w) + math.prod(r))


_MAC_RULES: dict[str, Callable[[onnx.NodeProto, ShapeMap], int | None]] = {
    "Conv": _conv_rule(1),
    "ConvInteger": _conv_rule(1),
    "QLinearConv": _conv_rule(3),
    "ConvTranspose": _conv_transpose_macs,
    "MatMul": _matmul_rule(0),
    "MatMulInteger": _matmul_rule(0),
    "QLinearMatMul": _matmul_rule(0),
    "Gemm": _gemm_macs,
    "LSTM": _rnn_macs,
    "GRU": _rnn_macs,
    "RNN": _rnn_macs,
}


def _sum_or_none(values: Iterable[int | None]) -> int | None:
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


# -------------------------------------------------------------------------------------------- torch


def _rnn_flops(input_shape: Sequence[int], *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """FLOPs of aten.lstm / gru / rnn_* (when they reach the dispatcher undecomposed): per step and
    sample, each 2-D weight matrix of every layer and direction is applied once - the same rule as the
    ONNX LSTM / GRU / RNN count. seq * batch is the product of the input's first two axes in either layout.
    """
    params: Sequence[Sequence[int]] = args[1]
    return 2 * math.prod(input_shape[:2]) * sum(math.prod(shape) for shape in params if len(shape) == 2)


def _mkldnn_rnn_layer_flops(
    input_shape: Sequence[int],
    weight_ih: Sequence[int],
    weight_hh: Sequence[int],
    *args: Any,
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    """FLOPs of one layer and direction of a oneDNN LSTM, which CPU builds of torch run nn.LSTM as."""
    return 2 * math.prod(input_shape[:2]) * (math.prod(weight_ih) + math.prod(weight_hh))


def _rnn_flop_mapping() -> dict[Any, Callable[..., int]]:
    """Formulas for the recurrent ops FlopCounterMode does not count by itself."""
    import torch

    aten = torch.ops.aten
    mapping: dict[Any, Callable[..., int]] = {
        getattr(aten, name): _rnn_flops
        for name in ("lstm", "gru", "rnn_tanh", "rnn_relu")
        if hasattr(aten, name)
    }
    if hasattr(aten, "mkldnn_rnn_layer"):
        mapping[aten.mkldnn_rnn_layer] = _mkldnn_rnn_layer_flops
    return mapping


def _count_flops(module: Callable[..., Any], example: Sequence[torch.Tensor]) -> tuple[int, dict[str, int]]:
    """Total FLOPs of one call and FLOPs per FlopCounterMode module key ("Root.child.leaf")."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False, custom_mapping=_rnn_flop_mapping())
    with torch.no_grad(), counter:
        module(*example)
    per_module = {key: int(sum(counts.values())) for key, counts in counter.get_flop_counts().items()}
    return int(counter.get_total_flops()), per_module


def _zeros(inputs: Sequence[TensorSpec], shapes: Mapping[str, list[int]]) -> list[torch.Tensor]:
    import torch

    tensors = []
    for spec in inputs:
        dtype = getattr(torch, spec.dtype, None)
        tensors.append(
            torch.zeros(shapes[spec.name], dtype=dtype if isinstance(dtype, torch.dtype) else None)
        )
    return tensors


@dataclass
class _TorchModules:
    """Modules by qualified name ("" = root): class name, own parameter count, and call order."""

    types: dict[str, str] = field(default_factory=dict)
    own_params: dict[str, int] = field(default_factory=dict)

    def layers(self, macs: Callable[[str], int | None]) -> list[LayerInfo]:
        """Leaf modules and modules that own parameters directly, in first-use order."""
        names = list(self.types) + [name for name in self.own_params if name not in self.types]
        result = []
        for name in names:
            is_leaf = name != "" and not any(other.startswith(f"{name}.") for other in names)
            if is_leaf or self.own_params.get(name, 0):
                layer_type = self.types.get(name, "Module")
                result.append(
                    LayerInfo(name or "(root)", layer_type, self.own_params.get(name, 0), macs(name))
                )
        return result


def _torch_result(
    runner: TorchRunner,
    modules: _TorchModules,
    total_params: int,
    flops_module: Callable[..., Any] | None,
    input_shapes: Mapping[str, Sequence[int]] | None,
    per_layer: bool,
    notes: list[str],
) -> ModelInspection:
    """Run FlopCounterMode once on zeros (when shapes are known) and assemble the inspection."""
    shapes_used, shape_notes = resolve_input_shapes(runner.inputs, input_shapes)
    notes = shape_notes + notes
    flops: int | None = None
    per_module: dict[str, int] = {}
    if shapes_used is not None and flops_module is not None:
        try:
            flops, per_module = _count_flops(flops_module, _zeros(runner.inputs, shapes_used))
        except Exception as exc:  # the model's own code failed on zeros of these shapes
            notes.append(f"Running the model on zeros of {shapes_used} to count FLOPs failed: {exc}")
    root = type(flops_module).__name__

    def layer_macs(name: str) -> int | None:
        if flops is None or not per_layer:
            return None
        return _own_flops(per_module, f"{root}.{name}" if name else root) // 2

    return ModelInspection(
        inputs=runner.inputs,
        outputs=runner.outputs,
        layers=modules.layers(layer_macs),
        total_params=total_params,
        macs=None if flops is None else flops // 2,
        flops=flops,
        input_shapes_used=shapes_used,
        notes=notes,
    )


def _own_flops(per_module: Mapping[str, int], key: str) -> int:
    """FLOPs of a module minus those of its direct submodules: what its own code (e.g. a matmul with
    its own parameter) costs. FlopCounterMode's key of a module includes all its submodules."""
    prefix = f"{key}."
    children = [k for k in per_module if k.startswith(prefix) and "." not in k[len(prefix) :]]
    return per_module.get(key, 0) - sum(per_module[child] for child in children)


def _load_torch(path: Path, fmt: ModelFormat) -> TorchRunner:
    runner = load_model(path, fmt)
    if not isinstance(runner, TorchRunner):  # load_model's torch formats always give a TorchRunner
        raise EngineError(f"Internal error: {fmt} loaded as {type(runner).__name__}.")
    return runner


def _inspect_torch_export(path: Path, input_shapes: Mapping[str, Sequence[int]] | None) -> ModelInspection:
    """Layers from the graph's nn_module_stack metadata and the program's parameters; FLOPs per layer
    from FlopCounterMode on torch.export.unflatten(program), which restores the module hierarchy."""
    import torch

    runner = _load_torch(path, "torch_export")
    program = runner.program
    if program is None:
        raise EngineError(f"Internal error: {path.name} loaded without its exported program.")
    modules = _export_modules(program)
    total_params = sum(modules.own_params.values())
    notes: list[str] = []
    try:
        flops_module: Callable[..., Any] = torch.export.unflatten(program)
        per_layer = True
    except Exception as exc:  # unflatten does not support every program; fall back to the flat module
        notes.append(f"Per-layer MACs unavailable, torch.export.unflatten failed: {exc}")
        flops_module, per_layer = runner.module, False
    return _torch_result(runner, modules, total_params, flops_module, input_shapes, per_layer, notes)


_CALL_SUFFIX = re.compile(r"@\d+$")


def _export_modules(program: torch.export.ExportedProgram) -> _TorchModules:
    modules = _TorchModules()
    for node in program.graph.nodes:
        for path, module_type in (node.meta.get("nn_module_stack") or {}).values():
            if str(path).startswith("_empty_nn_module_stack"):
                continue
            name = ".".join(_CALL_SUFFIX.sub("", part) for part in str(path).split(".")) if path else ""
            type_name = getattr(module_type, "__name__", str(module_type))
            modules.types.setdefault(name, type_name.rsplit(".", 1)[-1])
    state = program.state_dict
    for target in program.graph_signature.parameters:
        owner = target.rsplit(".", 1)[0] if "." in target else ""
        modules.own_params[owner] = modules.own_params.get(owner, 0) + state[target].numel()
    return modules


def _inspect_torchscript(path: Path, input_shapes: Mapping[str, Sequence[int]] | None) -> ModelInspection:
    """Layers from named_modules(); FlopCounterMode counts the total only, because TorchScript runs
    submodules inside its interpreter where the per-module hooks FlopCounterMode relies on never fire."""
    runner = _load_torch(path, "torchscript")
    module: Any = runner.module
    modules = _TorchModules()
    for name, submodule in module.named_modules():
        modules.types[name] = str(getattr(submodule, "original_name", type(submodule).__name__))
        own = sum(p.numel() for p in submodule.parameters(recurse=False))
        if own:
            modules.own_params[name] = own
    total_params = sum(p.numel() for p in module.parameters())
    notes = ["Per-layer MACs are not available for TorchScript; the total is counted."]
    return _torch_result(runner, modules, total_params, runner.module, input_shapes, False, notes)
