"""Per-layer fidelity profile: where in the network a compressed model starts to diverge from its golden one.

Both models run on the same batches; the intermediate activations of each batch are captured, matched by
layer name, folded into running sums and dropped, so memory holds one batch's activations at a time and
never grows with the dataset.

For every matched layer two comparisons are made (DESIGN.md, "Definitions": SQNR over all elements of
the dataset, cosine per sample, mean and min):

- accumulated: the compressed network up to this layer vs the golden one, both fed the same input. It
  carries the error of every layer before it.
- local: this compressed layer alone, fed the golden network's inputs to that layer, vs the golden
  layer's output. Only the error this layer adds shows here, so a layer that adds error stands out from
  the layers that merely carry it.

Capture and matching by format:

- ONNX vs ONNX: every float tensor computed from the graph inputs is exposed as a graph output (on a
  copy of the model written to a temporary folder; external data is read from the original folder).
  Tensors match by name; in a QDQ graph the output of the DequantizeLinear that re-quantizes a tensor,
  ``<name>_DequantizeLinear_Output`` (or ``..._Output_1``), stands for the float tensor ``<name>``, as in
  onnxruntime.quantization.qdq_loss_debug; graph inputs quantized that way appear as layers too (op type
  "Input"). Tensors consumed only by QuantizeLinear (the pre-quantization values) are not layers of
  their own. The local value of a layer runs the compressed nodes that produce its tensor back to the
  nearest matched tensors (e.g. DequantizeLinear -> QuantizeLinear -> Conv, with the weights'
  DequantizeLinear), with the golden values of those tensors fed in; all layers' sub-graphs sit side by
  side in one extra model, run once per batch. A layer's sub-graph includes the QuantizeLinear /
  DequantizeLinear of its own output, so even a layer that only moves data (Reshape) shows the
  quantization noise of its output when fed the unquantized golden values. onnxruntime runs with graph optimizations disabled (as
  qdq_loss_debug does), so a QDQ model runs as simulated quantization: quantize-dequantize in float.
- torch.export (.pt2) vs torch.export: the program is unflattened (torch.export.unflatten) to get its
  module hierarchy back, and forward hooks on the leaf modules capture each call's inputs and outputs.
  Layers are named by module path; a module called more than once gets ``path#k`` for its k-th extra call,
  and a module with several float outputs ``name[i]`` per output. The local value calls the compressed
  module on the golden module's captured inputs.
- ONNX vs torch.export: layers are matched only through `name_map`; local values are not computed.
- TorchScript: not supported (TorchScript modules do not run Python forward hooks); the profile is empty
  and says so in its notes.

`name_map` (golden name -> compressed name) takes precedence over automatic matching and is the only way
to match layers whose names differ.

Cosine needs the batch on axis 0; a layer whose tensor is not batch-first (its first axis differs from
the batch size on some batch) reports SQNR only. A layer whose golden and compressed shapes differ is
dropped with a note. NaN/Inf in an activation make that layer's values undefined (reported as None).
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from worker.engine.errors import DatasetMismatchError, EngineError, ModelLoadError
from worker.engine.loaders import TorchRunner, extract_onnx_zip, load_model
from worker.engine.metrics.numerical import NumericalAccumulator, json_float, json_sqnr
from worker.engine.types import ModelFormat

if TYPE_CHECKING:
    import onnx
    import onnxruntime
    import torch

DEQUANT_OUTPUT_SUFFIXES = ("_DequantizeLinear_Output", "_DequantizeLinear_Output_1")
"""Names onnxruntime's QDQ quantizer gives the dequantized copy of a tensor (quant_utils.DEQUANT_OUTPUT_SUFFIX
and qdq_loss_debug's second-consumer variant)."""

INPUT_OP_TYPE = "Input"
"""op_type of a layer that stands for a model input (an ONNX graph input quantized by QDQ nodes)."""

_LOCAL_PREFIX = "__kneeboard_local_{}__/"
_ORT_FLOAT_TYPES = {"tensor(float)": 1, "tensor(double)": 11, "tensor(float16)": 10}
"""onnxruntime type strings of the float tensors profiled, with their onnx.TensorProto data types."""
_NUMPY_OF_ORT = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16}

Feeds = Mapping[str, np.ndarray]


# ------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class LayerStats:
    """Dataset totals of one comparison: SQNR (dB, +inf when the error is exactly 0, NaN when undefined)
    and per-sample cosine mean/min (None when the layer's tensor is not batch-first)."""

    sqnr_db: float
    cosine_mean: float | None
    cosine_min: float | None

    def to_dict(self) -> dict[str, Any]:
        """``{"cosine_mean", "cosine_min", "sqnr_db", "sqnr_db_infinite"}``, JSON-safe (see json_sqnr)."""
        return {
            "cosine_mean": None if self.cosine_mean is None else json_float(self.cosine_mean),
            "cosine_min": None if self.cosine_min is None else json_float(self.cosine_min),
            **json_sqnr(self.sqnr_db),
        }


@dataclass(frozen=True)
class LayerFidelity:
    """One matched layer. `name` is the golden tensor / module name, `depth` its index in the profile
    (topological order of the golden model) and `depth_fraction` = depth / (number of layers - 1)."""

    name: str
    compressed_name: str
    op_type: str
    depth: int
    depth_fraction: float
    accumulated: LayerStats
    local: LayerStats | None
    local_note: str | None = None
    """Why `local` is None (or anything else worth knowing about it)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "compressed_name": self.compressed_name,
            "op_type": self.op_type,
            "depth": self.depth,
            "depth_fraction": self.depth_fraction,
            "accumulated": self.accumulated.to_dict(),
            "local": None if self.local is None else self.local.to_dict(),
            "local_note": self.local_note,
        }


@dataclass
class LayerProfile:
    """The per-layer profile: matched layers in topological order, the names left unmatched on each side,
    and notes on how the profile was made (matching rule, layers or values left out and why)."""

    layers: list[LayerFidelity]
    unmatched_golden: list[str] = field(default_factory=list)
    unmatched_compressed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_samples: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: non-finite numbers become None (SQNR +inf is flagged by ``sqnr_db_infinite``)."""
        return {
            "n_samples": self.n_samples,
            "layers": [layer.to_dict() for layer in self.layers],
            "unmatched_golden": list(self.unmatched_golden),
            "unmatched_compressed": list(self.unmatched_compressed),
            "notes": list(self.notes),
        }


# -------------------------------------------------------------------------------------- accumulation


class _StatsAcc:
    """Running sums of one comparison (wraps NumericalAccumulator); remembers shape problems and whether
    every batch had the batch on axis 0."""

    def __init__(self) -> None:
        self._num = NumericalAccumulator()
        self.batch_first = True
        self.problem: str | None = None

    def update(self, a: np.ndarray, b: np.ndarray, batch_size: int) -> None:
        """Fold one batch in; a shape mismatch is recorded in `problem` and stops further updates."""
        if self.problem is not None:
            return
        if a.shape != b.shape:
            self.problem = f"shapes differ (golden {list(a.shape)}, compressed {list(b.shape)})"
            return
        if a.ndim == 0 or a.shape[0] != batch_size:
            self.batch_first = False
        self._num.update(a, b)

    def result(self) -> LayerStats:
        """The totals so far (cosine None unless every batch was batch-first)."""
        num = self._num
        if not self.batch_first or num.n_samples == 0:
            return LayerStats(num.sqnr_db(), None, None)
        return LayerStats(num.sqnr_db(), num.sum_cosine / num.n_samples, num.min_cosine)


@dataclass
class _Pair:
    """A matched layer while the dataset is being processed."""

    golden: str
    compressed: str
    op_type: str
    accumulated: _StatsAcc = field(default_factory=_StatsAcc)
    local: _StatsAcc | None = None
    local_note: str | None = None

    def drop_local(self, reason: str) -> None:
        self.local, self.local_note = None, reason


# ------------------------------------------------------------------------------------------- sides


class _Side(Protocol):
    """One model, able to capture named intermediate tensors of a batch."""

    family: Literal["onnx", "torch"]

    @property
    def order(self) -> list[str]:
        """Every capturable name, in execution (topological) order."""
        ...

    @property
    def candidates(self) -> list[str]:
        """The names that count as layers (a subset of `order`)."""
        ...

    def op_type(self, name: str) -> str: ...

    def capture(self, feeds: Feeds, names: Collection[str]) -> dict[str, np.ndarray]: ...


def _bind(feeds: Feeds, names: Sequence[str], role: str) -> dict[str, np.ndarray]:
    """The feeds a model needs: by input name, else by position when the counts agree."""
    if all(name in feeds for name in names):
        return {name: np.asarray(feeds[name]) for name in names}
    if len(feeds) == len(names):
        return {name: np.asarray(value) for name, value in zip(names, feeds.values(), strict=True)}
    raise DatasetMismatchError(
        f"the {role} model expects inputs {list(names)} but the batch has arrays {sorted(feeds)}"
    )


def _batch_size(feeds: Feeds) -> int:
    """Length of axis 0 of the batch's first array."""
    if not feeds:
        raise DatasetMismatchError("a batch holds no input arrays")
    first = np.asarray(next(iter(feeds.values())))
    if first.ndim == 0:
        raise DatasetMismatchError("input arrays need a batch dimension (axis 0)")
    return int(first.shape[0])


# -------------------------------------------------------------------------------------------- onnx


def _ort_session(path: Path, external_folder: Path) -> onnxruntime.InferenceSession:
    """A CPU session with graph optimizations off; external data is looked up in `external_folder`."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.add_session_config_entry(
        "session.model_external_initializers_file_folder_path", str(external_folder)
    )
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _subgraph_inputs(node: onnx.NodeProto) -> list[str]:
    """Names a node reads, including (over-approximated) the outer-scope names its subgraphs read."""
    names = list(node.input)
    for attr in node.attribute:
        graphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
        for graph in graphs:
            for inner in graph.node:
                names.extend(_subgraph_inputs(inner))
    return names


def _has_subgraph(node: onnx.NodeProto) -> bool:
    """Whether the node carries a graph attribute (If, Loop, Scan...)."""
    return any(attr.HasField("g") or len(attr.graphs) > 0 for attr in node.attribute)


def _input_dependent_outputs(graph: onnx.GraphProto, graph_inputs: Collection[str]) -> list[str]:
    """Outputs of nodes that depend on a graph input, in node (topological) order."""
    dependent = set(graph_inputs)
    outputs: list[str] = []
    for node in graph.node:
        if any(name in dependent for name in _subgraph_inputs(node)):
            produced = [name for name in node.output if name]
            dependent.update(produced)
            outputs.extend(produced)
    return outputs


def _pre_quantization(graph: onnx.GraphProto) -> set[str]:
    """Tensors whose every consumer is a QuantizeLinear: represented by their dequantized copy."""
    consumers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, set()).add(node.op_type)
    return {name for name, ops in consumers.items() if ops == {"QuantizeLinear"}}


class _OnnxSide:
    """An ONNX model with every input-dependent float tensor exposed as an output (one session)."""

    family: Literal["onnx", "torch"] = "onnx"

    def __init__(self, path: Path, workdir: Path, role: str) -> None:
        import onnx

        try:
            self.model = onnx.load(str(path), load_external_data=False)
        except Exception as exc:  # protobuf decode errors and OSError share no useful base class
            raise ModelLoadError(f"onnx could not load {path.name}: {exc}") from exc
        self.role = role
        self.folder = path.parent
        graph = self.model.graph
        initializers = {init.name for init in graph.initializer}
        self.graph_inputs = [vi.name for vi in graph.input if vi.name not in initializers]
        self.input_set = set(self.graph_inputs)
        self.producers = {out: (i, node) for i, node in enumerate(graph.node) for out in node.output if out}
        dependent = _input_dependent_outputs(graph, self.graph_inputs)
        self.session = self._augmented_session(dependent, workdir / f"{role}.onnx")
        self.types = {arg.name: arg.type for arg in self.session.get_outputs()}
        self.types.update({arg.name: arg.type for arg in self.session.get_inputs()})
        floats = [
            name for name in chain(self.graph_inputs, dependent) if self.types.get(name) in _ORT_FLOAT_TYPES
        ]
        self._order = floats
        skipped = _pre_quantization(graph) | set(self.graph_inputs)
        self._candidates = [name for name in floats if name not in skipped]

    def _augmented_session(self, names: Sequence[str], target: Path) -> onnxruntime.InferenceSession:
        """Write a copy of the model that outputs `names` too, and open it."""
        import onnx

        augmented = onnx.ModelProto()
        augmented.CopyFrom(self.model)
        existing = {vi.name for vi in augmented.graph.output}
        augmented.graph.output.extend(
            onnx.ValueInfoProto(name=name) for name in names if name not in existing
        )
        onnx.save(augmented, str(target))
        try:
            return _ort_session(target, self.folder)
        except Exception as exc:  # onnxruntime's pybind exceptions share no public base class
            raise ModelLoadError(f"onnxruntime could not load the {self.role} model: {exc}") from exc

    @property
    def order(self) -> list[str]:
        return list(self._order)

    @property
    def candidates(self) -> list[str]:
        return list(self._candidates)

    def op_type(self, name: str) -> str:
        entry = self.producers.get(name)
        return entry[1].op_type if entry is not None else INPUT_OP_TYPE

    def feeds(self, feeds: Feeds) -> dict[str, np.ndarray]:
        """The batch's arrays for this model's graph inputs."""
        return _bind(feeds, self.graph_inputs, self.role)

    def capture(self, feeds: Feeds, names: Collection[str]) -> dict[str, np.ndarray]:
        """Run one batch and return the named tensors (graph inputs are returned as fed)."""
        bound = self.feeds(feeds)
        wanted = [name for name in names if name not in bound]
        try:
            values = self.session.run(wanted, bound) if wanted else []  # [] would mean "every output"
        except Exception as exc:
            raise EngineError(f"onnxruntime failed to run the {self.role} model: {exc}") from exc
        captured = dict(zip(wanted, (np.asarray(v) for v in values), strict=True))
        captured.update({name: bound[name] for name in names if name in bound})
        return captured


def _cluster(
    target: str, producers: Mapping[str, tuple[int, onnx.NodeProto]], stops: Collection[str]
) -> list[int]:
    """Indices (sorted) of the nodes that compute `target` back to the `stops`, graph inputs and
    initializers."""
    nodes: set[int] = set()
    seen: set[str] = set()
    stack = [target]
    while stack:
        tensor = stack.pop()
        if tensor in seen:
            continue
        seen.add(tensor)
        entry = producers.get(tensor)
        if entry is None or entry[0] in nodes:
            continue
        nodes.add(entry[0])
        stack.extend(name for name in entry[1].input if name and name not in stops)
    return sorted(nodes)


@dataclass
class _LocalGraph:
    """The nodes of all local sub-graphs, renamed apart, and what the extra model reads and returns."""

    nodes: list[onnx.NodeProto] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # golden name -> output of the extra model
    boundaries: dict[str, str] = field(default_factory=dict)  # compressed tensor fed -> golden name
    graph_inputs: set[str] = field(default_factory=set)
    skipped: dict[str, str] = field(default_factory=dict)  # golden name -> reason


def _copy_cluster(
    side: _OnnxSide, indices: list[int], prefix: str, boundary: Mapping[str, str], local: _LocalGraph
) -> None:
    """Append renamed copies of the nodes `indices`; record the boundary tensors and graph inputs read."""
    import onnx

    nodes = [side.model.graph.node[i] for i in indices]
    internal = {out for node in nodes for out in node.output if out}
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        del copy.input[:], copy.output[:]
        copy.input.extend(prefix + name if name in internal else name for name in node.input)
        copy.output.extend(prefix + name if name else name for name in node.output)
        local.nodes.append(copy)
        for name in node.input:
            if name in boundary and name not in internal:
                local.boundaries[name] = boundary[name]
            elif name in side.input_set:
                local.graph_inputs.add(name)


def _local_graph(side: _OnnxSide, pairs: Sequence[_Pair]) -> _LocalGraph:
    """Plan the local sub-graph of every pair: the compressed nodes from its tensor back to matched ones."""
    boundary = {p.compressed: p.golden for p in pairs if p.compressed not in side.graph_inputs}
    local = _LocalGraph()
    for index, pair in enumerate(pairs):
        indices = _cluster(pair.compressed, side.producers, set(boundary) - {pair.compressed})
        if not indices:
            local.skipped[pair.golden] = "the compressed tensor is a model input"
            continue
        if any(_has_subgraph(side.model.graph.node[i]) for i in indices):
            local.skipped[pair.golden] = (
                "the layer holds control flow (If/Loop/Scan), which is not re-run alone"
            )
            continue
        prefix = _LOCAL_PREFIX.format(index)
        _copy_cluster(side, indices, prefix, boundary, local)
        local.outputs[pair.golden] = prefix + pair.compressed
    return local


class _OnnxLocal:
    """Runs every layer's compressed sub-graph on golden activations, all in one extra ONNX model."""

    def __init__(self, side: _OnnxSide, pairs: Sequence[_Pair], workdir: Path) -> None:
        self.plan = _local_graph(side, pairs)
        self._dtypes = {name: _NUMPY_OF_ORT[side.types[name]] for name in self.plan.boundaries}
        self._inputs = sorted(self.plan.graph_inputs)
        self._side = side
        self.session: onnxruntime.InferenceSession | None = None
        if self.plan.outputs:  # a model without outputs would be refused
            self.session = _ort_session(self._write(side, workdir / "local.onnx"), side.folder)

    def _write(self, side: _OnnxSide, target: Path) -> Path:
        """Save the compressed model with the planned nodes, inputs and outputs (and only the initializers
        they read) to `target`."""
        import onnx
        from onnx import helper

        model = onnx.ModelProto()
        model.CopyFrom(side.model)
        graph = model.graph
        inputs = [vi for vi in graph.input if vi.name in self.plan.graph_inputs]
        inputs += [
            helper.make_tensor_value_info(name, _ORT_FLOAT_TYPES[side.types[name]], None)
            for name in self.plan.boundaries
        ]
        used = {name for node in self.plan.nodes for name in node.input}
        initializers = [init for init in graph.initializer if init.name in used]
        del graph.node[:], graph.input[:], graph.output[:], graph.value_info[:], graph.initializer[:]
        graph.initializer.extend(initializers)
        graph.node.extend(self.plan.nodes)
        graph.input.extend(inputs)
        graph.output.extend(onnx.ValueInfoProto(name=out) for out in self.plan.outputs.values())
        onnx.save(model, str(target))
        return target

    def run(self, feeds: Feeds, golden: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Local outputs by golden name for one batch; `golden` holds the golden activations."""
        if self.session is None:
            return {}
        bound = self._side.feeds(feeds)
        inputs = {name: bound[name] for name in self._inputs}
        inputs.update(
            {
                name: np.asarray(golden[g], dtype=self._dtypes[name])
                for name, g in self.plan.boundaries.items()
            }
        )
        values = self.session.run(list(self.plan.outputs.values()), inputs)
        return {g: np.asarray(v) for g, v in zip(self.plan.outputs, values, strict=True)}


# ------------------------------------------------------------------------------------------- torch


def _module_types(program: torch.export.ExportedProgram) -> dict[str, str]:
    """Module path -> class name, from the nn_module_stack metadata of the exported graph."""
    types: dict[str, str] = {}
    for node in program.graph.nodes:
        for path, type_name in (node.meta.get("nn_module_stack") or {}).values():
            types[str(path)] = str(type_name).rsplit(".", 1)[-1]
    return types


def _float_leaves(value: Any) -> list[torch.Tensor]:
    """The floating-point tensors in a (nested) module output, in pytree order."""
    import torch
    from torch.utils import _pytree

    return [x for x in _pytree.tree_leaves(value) if isinstance(x, torch.Tensor) and x.is_floating_point()]


def _leaf_names(call: str, count: int) -> list[str]:
    """Layer names of a call's float outputs: the call itself for one output, ``call[i]`` for several."""
    return [call] if count == 1 else [f"{call}[{i}]" for i in range(count)]


def _to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A numpy copy (bfloat16 and other dtypes numpy lacks are widened to float32)."""
    import torch

    if tensor.dtype not in (torch.float16, torch.float32, torch.float64):
        tensor = tensor.float()
    return np.array(tensor.detach().cpu().numpy(), copy=True)


@dataclass(frozen=True)
class _TorchLayer:
    """Where a torch layer's values come from: a module call and the index of the float output."""

    call: str  # module path, or path#k for the k-th extra call
    path: str
    leaf: int


class _TorchSide:
    """A torch.export program, unflattened, with forward hooks on its leaf modules."""

    family: Literal["onnx", "torch"] = "torch"

    def __init__(self, path: Path, role: str) -> None:
        import torch

        runner = load_model(path, "torch_export")
        assert isinstance(runner, TorchRunner) and runner.program is not None
        self.role = role
        self.inputs = runner.inputs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.module = torch.export.unflatten(runner.program)
            except Exception as exc:  # unflatten fails on some programs (e.g. with preserved calls)
                raise ModelLoadError(f"torch.export.unflatten failed on the {role} model: {exc}") from exc
        self._types = _module_types(runner.program)
        self.leaves = {
            name: module
            for name, module in self.module.named_modules()
            if name and next(iter(module.children()), None) is None
        }
        for name, module in self.leaves.items():
            module.register_forward_hook(partial(self._hook, name), with_kwargs=True)
        self.keep_inputs = False
        self.last_inputs: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        self.layers: dict[str, _TorchLayer] = {}
        self._calls: dict[str, int] = {}
        self._wanted: Collection[str] | None = None
        self._recording = False
        self._captured: dict[str, np.ndarray] = {}

    def _hook(
        self, path: str, _module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any
    ) -> None:
        """Forward hook: name the call, keep the wanted float outputs (and the inputs, if asked)."""
        from torch.utils import _pytree

        if not self._recording:
            return
        count = self._calls.get(path, 0)
        self._calls[path] = count + 1
        call = path if count == 0 else f"{path}#{count}"
        leaves = _float_leaves(output)
        for index, name in enumerate(_leaf_names(call, len(leaves))):
            self.layers.setdefault(name, _TorchLayer(call, path, index))
            if self._wanted is None or name in self._wanted:
                self._captured[name] = _to_numpy(leaves[index])
        if self.keep_inputs:
            self.last_inputs[call] = _pytree.tree_map(_clone_tensor, (args, kwargs))

    @property
    def order(self) -> list[str]:
        return list(self.layers)

    @property
    def candidates(self) -> list[str]:
        return list(self.layers)

    def op_type(self, name: str) -> str:
        layer = self.layers[name]
        return self._types.get(layer.path, type(self.leaves[layer.path]).__name__)

    def capture(self, feeds: Feeds, names: Collection[str] | None) -> dict[str, np.ndarray]:
        """Run one batch; return the named layers' outputs (all of them when `names` is None)."""
        import torch

        bound = _bind(feeds, [spec.name for spec in self.inputs], self.role)
        tensors = [
            torch.from_numpy(np.require(_cast(bound[spec.name], spec.dtype), requirements=["C", "W"]))
            for spec in self.inputs
        ]
        self._calls, self._captured, self.last_inputs = {}, {}, {}
        self._wanted = None if names is None else set(names)
        self._recording = True
        try:
            with torch.inference_mode():
                self.module(*tensors)
        except Exception as exc:  # whatever the model's own code raises
            raise EngineError(f"torch failed to run the {self.role} model: {exc}") from exc
        finally:
            self._recording = False
        captured, self._captured = self._captured, {}
        return captured

    def call(self, name: str, inputs: tuple[tuple[Any, ...], dict[str, Any]]) -> list[torch.Tensor]:
        """Call the leaf module behind layer `name` alone on `inputs`; returns its float outputs."""
        import torch

        args, kwargs = inputs
        module = self.leaves[self.layers[name].path]
        with torch.inference_mode():
            return _float_leaves(module(*args, **kwargs))


def _clone_tensor(value: Any) -> Any:
    """Clone tensors (a later in-place op must not change a captured input); keep anything else."""
    import torch

    return value.clone() if isinstance(value, torch.Tensor) else value


def _cast(array: np.ndarray, dtype: str) -> np.ndarray:
    """`array` as the input spec's dtype (left as it is when numpy does not know that dtype)."""
    try:
        wanted = np.dtype(dtype)
    except TypeError:
        return array
    return array if array.dtype == wanted else array.astype(wanted)


class _TorchLocal:
    """Calls each compressed leaf module on the inputs its golden counterpart received."""

    def __init__(self, golden: _TorchSide, compressed: _TorchSide, pairs: Sequence[_Pair]) -> None:
        golden.keep_inputs = True
        self._golden, self._compressed = golden, compressed
        self._pairs = {p.golden: p for p in pairs if p.local is not None}

    def run(self, feeds: Feeds, golden: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Local outputs by golden name for the batch the golden side captured last."""
        results: dict[str, np.ndarray] = {}
        cache: dict[tuple[str, str], list[torch.Tensor]] = {}
        for name, pair in list(self._pairs.items()):
            g_call = self._golden.layers[name].call
            key = (self._compressed.layers[pair.compressed].call, g_call)
            try:
                if key not in cache:
                    cache[key] = self._compressed.call(pair.compressed, self._golden.last_inputs[g_call])
                results[name] = _to_numpy(cache[key][self._compressed.layers[pair.compressed].leaf])
            except Exception as exc:  # the compressed module may not accept the golden inputs
                pair.drop_local(f"the compressed module failed on the golden inputs: {exc}")
                del self._pairs[name]
        return results


# ---------------------------------------------------------------------------------------- matching


def _auto_match(
    name: str, golden: _Side, golden_names: Collection[str], compressed: _Side, targets: Collection[str]
) -> str | None:
    """The compressed tensor standing for golden `name`: its dequantized QDQ copy (unless the golden model
    has that copy too, being quantized itself), else the same name; None across formats."""
    if golden.family != compressed.family:
        return None
    if compressed.family == "onnx":
        for suffix in DEQUANT_OUTPUT_SUFFIXES:
            if name + suffix in targets and name + suffix not in golden_names:
                return name + suffix
    return name if name in targets else None


def _match(golden: _Side, compressed: _Side, name_map: Mapping[str, str], notes: list[str]) -> list[_Pair]:
    """Pair golden and compressed names (name_map first, then automatic), in golden order."""
    same = golden.family == compressed.family
    if not same and not name_map:
        notes.append(
            f"The golden model is {golden.family} and the compressed one {compressed.family}: their layers can "
            "only be matched through a name mapping (golden name -> compressed name), and none was given."
        )
    golden_names, compressed_names = set(golden.order), set(compressed.order)
    for g, c in name_map.items():
        if g not in golden_names:
            notes.append(f"name_map: the golden model has no layer or float tensor {g!r}.")
        elif c not in compressed_names:
            notes.append(f"name_map: the compressed model has no layer or float tensor {c!r} (for {g!r}).")
    targets = set(compressed.candidates)
    auto_names = set(golden.candidates) | {n for n in golden.order if golden.op_type(n) == INPUT_OP_TYPE}
    pairs: list[_Pair] = []
    for name in golden.order:
        if name in name_map:
            target = name_map[name] if name_map[name] in compressed_names else None
        elif name in auto_names:
            target = _auto_match(name, golden, golden_names, compressed, targets)
        else:
            target = None
        if target is not None:
            pairs.append(_Pair(name, target, golden.op_type(name)))
    return pairs


# --------------------------------------------------------------------------------------------- run


def _open_side(path: Path, fmt: ModelFormat, workdir: Path, role: str) -> _OnnxSide | _TorchSide:
    """Load one model for capture (an onnx_zip is extracted into `workdir` first)."""
    if fmt == "onnx":
        return _OnnxSide(Path(path), workdir, role)
    if fmt == "onnx_zip":
        folder = workdir / f"{role}_zip"
        folder.mkdir()
        return _OnnxSide(extract_onnx_zip(Path(path), folder), workdir, role)
    if fmt == "torch_export":
        return _TorchSide(Path(path), role)
    raise ModelLoadError(f"Unknown model format {fmt!r} for a layer profile.")


def _make_local(
    golden: _OnnxSide | _TorchSide, compressed: _OnnxSide | _TorchSide, pairs: list[_Pair], workdir: Path
) -> _OnnxLocal | _TorchLocal | None:
    """The local evaluator for these formats; pairs whose local value cannot be computed say why."""
    for pair in pairs:
        pair.local = _StatsAcc()
    if isinstance(golden, _TorchSide) and isinstance(compressed, _TorchSide):
        return _TorchLocal(golden, compressed, pairs)
    if not (isinstance(golden, _OnnxSide) and isinstance(compressed, _OnnxSide)):
        for pair in pairs:
            pair.drop_local("local values need both models in the same format (ONNX or torch.export)")
        return None
    try:
        local = _OnnxLocal(compressed, pairs, workdir)
    except Exception as exc:  # onnx / onnxruntime refusing the extra model
        for pair in pairs:
            pair.drop_local(f"onnxruntime could not build the local sub-graphs: {exc}")
        return None
    for pair in pairs:
        if pair.golden in local.plan.skipped:
            pair.drop_local(local.plan.skipped[pair.golden])
    return local


def _run_local(
    local: _OnnxLocal | _TorchLocal, pairs: list[_Pair], feeds: Feeds, g: Mapping[str, np.ndarray], n: int
) -> _OnnxLocal | _TorchLocal | None:
    """Fold one batch's local values in; returns None (and says why) if the evaluator fails."""
    try:
        values = local.run(feeds, g)
    except Exception as exc:  # e.g. a golden tensor that the compressed sub-graph cannot take
        for pair in pairs:
            if pair.local is not None:
                pair.drop_local(f"the local sub-graphs failed to run: {exc}")
        return None
    for pair in pairs:
        if pair.local is not None and pair.golden in values:
            pair.local.update(g[pair.golden], values[pair.golden], n)
    return local


def _process(
    golden: _OnnxSide | _TorchSide,
    compressed: _OnnxSide | _TorchSide,
    pairs: list[_Pair],
    local: _OnnxLocal | _TorchLocal | None,
    batches: Iterator[Feeds],
    on_progress: Callable[[int], None] | None,
) -> int:
    """Run every batch through both models (and the local evaluator), folding it into the pairs' sums."""
    g_names = {p.golden for p in pairs}
    c_names = {p.compressed for p in pairs}
    done = 0
    for feeds in batches:
        n = _batch_size(feeds)
        g = golden.capture(feeds, g_names)
        c = compressed.capture(feeds, c_names)
        for pair in pairs:
            pair.accumulated.update(g[pair.golden], c[pair.compressed], n)
        del c
        if local is not None:
            local = _run_local(local, pairs, feeds, g, n)
        del g
        done += n
        if on_progress is not None:
            on_progress(done)
    return done


def _finish(pairs: list[_Pair], notes: list[str]) -> list[LayerFidelity]:
    """Turn the pairs into results; layers with shape problems are dropped with a note."""
    kept = []
    for pair in pairs:
        if pair.accumulated.problem is not None:
            notes.append(f"Layer {pair.golden!r} left out: {pair.accumulated.problem}.")
        else:
            kept.append(pair)
    not_batch_first = [pair.golden for pair in kept if not pair.accumulated.batch_first]
    if not_batch_first:
        notes.append(
            f"No cosine for {', '.join(not_batch_first)}: their tensors do not have the batch on axis 0."
        )
    last = max(len(kept) - 1, 1)
    layers = []
    for depth, pair in enumerate(kept):
        local, note = _local_result(pair)
        layers.append(
            LayerFidelity(
                pair.golden,
                pair.compressed,
                pair.op_type,
                depth,
                depth / last,
                pair.accumulated.result(),
                local,
                note,
            )
        )
    return layers


def _local_result(pair: _Pair) -> tuple[LayerStats | None, str | None]:
    """The pair's local totals and note; None with the reason when they could not be computed."""
    if pair.local is None:
        return None, pair.local_note
    if pair.local.problem is not None:
        return None, f"local output {pair.local.problem}"
    return pair.local.result(), pair.local_note


def _summarise_local(layers: list[LayerFidelity], notes: list[str]) -> None:
    """One note naming the layers without a local value."""
    missing = [layer.name for layer in layers if layer.local is None]
    if missing:
        notes.append(f"No local value for {len(missing)} layer(s) ({', '.join(missing)}); see local_note.")


def _matching_note(golden: _Side, compressed: _Side) -> str:
    """How layers were matched for this pair of formats."""
    if golden.family == compressed.family == "onnx":
        return (
            "ONNX tensors matched by name; a QDQ DequantizeLinear output '<name>_DequantizeLinear_Output' stands "
            "for the float tensor '<name>' (as in onnxruntime's qdq_loss_debug). onnxruntime ran with graph "
            "optimizations disabled."
        )
    if golden.family == compressed.family:
        return "torch.export leaf modules matched by module path (k-th extra call of a module: 'path#k')."
    return "Layers matched through the name mapping only; local values need both models in the same format."


def profile_layers(
    golden_path: Path,
    golden_fmt: ModelFormat,
    compressed_path: Path,
    compressed_fmt: ModelFormat,
    feeds_batches: Iterable[Mapping[str, np.ndarray]],
    *,
    name_map: Mapping[str, str] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> LayerProfile:
    """Profile the accumulated and local fidelity of every matched layer over the batches.

    feeds_batches yields one dict of input arrays per batch (batch on axis 0), bound to the models' input
    names (a model whose names differ takes them by position). on_progress(samples done) is called after
    each batch and may raise JobCancelled, which propagates. Raises ModelLoadError, DatasetMismatchError
    (e.g. no batches) or EngineError when a model fails to run.
    """
    notes: list[str] = []
    if "torchscript" in (golden_fmt, compressed_fmt):
        notes.append(
            "Per-layer profiles of TorchScript models are not supported: TorchScript modules do not run Python "
            "forward hooks. Export the model with torch.export (.pt2) or to ONNX to profile its layers."
        )
        return LayerProfile(layers=[], notes=notes)
    batches = iter(feeds_batches)
    first = next(batches, None)
    if first is None:
        raise DatasetMismatchError("the dataset has no samples")
    with tempfile.TemporaryDirectory(prefix="kneeboard-layers-") as tmp:
        workdir = Path(tmp)
        golden = _open_side(golden_path, golden_fmt, workdir, "golden")
        compressed = _open_side(compressed_path, compressed_fmt, workdir, "compressed")
        for side in (golden, compressed):
            if isinstance(side, _TorchSide):
                side.capture(first, None)  # discovers the leaf-module calls
        notes.append(_matching_note(golden, compressed))
        pairs = _match(golden, compressed, name_map or {}, notes)
        local = _make_local(golden, compressed, pairs, workdir)
        n = _process(golden, compressed, pairs, local, chain([first], batches), on_progress)
    matched_g = {p.golden for p in pairs}
    matched_c = {p.compressed for p in pairs}
    layers = _finish(pairs, notes)
    _summarise_local(layers, notes)
    return LayerProfile(
        layers=layers,
        unmatched_golden=[name for name in golden.candidates if name not in matched_g],
        unmatched_compressed=[name for name in compressed.candidates if name not in matched_c],
        notes=notes,
        n_samples=n,
    )
