"""Capture of an ONNX model's intermediate tensors: every input-dependent float tensor is exposed as a graph
output (on a copy of the model written to a temporary folder; external data is read from the original
folder), and one onnxruntime session returns the ones asked for."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.layer_profile.bound_run import BoundRunner
from worker.engine.layer_profile.sides import INPUT_OP_TYPE, Feeds, bind_feeds

if TYPE_CHECKING:
    import onnx
    import onnxruntime

ORT_FLOAT_TYPES = {"tensor(float)": 1, "tensor(double)": 11, "tensor(float16)": 10}
"""onnxruntime type strings of the float tensors profiled, with their onnx.TensorProto data types."""
NUMPY_OF_ORT = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16}


def ort_session(
    path: Path, external_folder: Path, intra_op_threads: int | None
) -> onnxruntime.InferenceSession:
    """A CPU session with graph optimizations off (a QDQ model then runs as simulated quantization, as in
    qdq_loss_debug); external data is looked up in `external_folder`.

    The CPU memory arena is off: with every layer exposed as an output, a run's peak is all the layers of
    the batch, and an arena would keep that much reserved for each of the profile's three sessions after
    the run (the profile's batch size is chosen for one run's peak at a time)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = False
    if intra_op_threads is not None:
        options.intra_op_num_threads = intra_op_threads
    options.add_session_config_entry(
        "session.model_external_initializers_file_folder_path", str(external_folder)
    )
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def subgraph_inputs(node: onnx.NodeProto) -> list[str]:
    """Names a node reads, including (over-approximated) the outer-scope names its subgraphs read."""
    names = list(node.input)
    for attr in node.attribute:
        graphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
        for graph in graphs:
            for inner in graph.node:
                names.extend(subgraph_inputs(inner))
    return names


def has_subgraph(node: onnx.NodeProto) -> bool:
    """Whether the node carries a graph attribute (If, Loop, Scan...)."""
    return any(attr.HasField("g") or len(attr.graphs) > 0 for attr in node.attribute)


def _input_dependent_outputs(graph: onnx.GraphProto, graph_inputs: Collection[str]) -> list[str]:
    """Outputs of nodes that depend on a graph input, in node (topological) order."""
    dependent = set(graph_inputs)
    outputs: list[str] = []
    for node in graph.node:
        if any(name in dependent for name in subgraph_inputs(node)):
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


class OnnxSide:
    """An ONNX model with every input-dependent float tensor exposed as an output (one session)."""

    family: Literal["onnx", "torch"] = "onnx"

    def __init__(self, path: Path, workdir: Path, role: str, intra_op_threads: int | None = None) -> None:
        import onnx

        try:
            self.model = onnx.load(str(path), load_external_data=False)
        except Exception as exc:  # protobuf decode errors and OSError share no useful base class
            raise ModelLoadError(f"onnx could not load {path.name}: {exc}") from exc
        self.role = role
        self.folder = path.parent
        self.threads = intra_op_threads
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
            name for name in chain(self.graph_inputs, dependent) if self.types.get(name) in ORT_FLOAT_TYPES
        ]
        self._order = floats
        skipped = _pre_quantization(graph) | set(self.graph_inputs)
        self._candidates = [name for name in floats if name not in skipped]
        dims = [arg.shape[0] if arg.shape else None for arg in self.session.get_inputs()]
        fixed = {dim for dim in dims if isinstance(dim, int) and dim > 0}
        self._fixed_batch = min(fixed) if fixed else None
        self._workdir = workdir
        self._runner: BoundRunner | None = None

    def narrow(self, names: Collection[str]) -> None:
        """Capture only `names` from now on: a session that outputs just those tensors (instead of every
        input-dependent one) and writes them into buffers reused across batches (bound_run.py). On
        EfficientNet-Lite0 at 224 px the golden capture went from 51.5 to 34.8 ms per sample."""
        wanted = [name for name in self._order if name in names and name not in self.input_set]
        del self.session  # the all-outputs session is only needed to plan; free it before the next
        session = self._augmented_session(wanted, self._workdir / f"{self.role}_capture.onnx")
        self.session = session
        self._runner = BoundRunner(session, wanted)

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
            return ort_session(target, self.folder, self.threads)
        except Exception as exc:  # onnxruntime's pybind exceptions share no public base class
            raise ModelLoadError(f"onnxruntime could not load the {self.role} model: {exc}") from exc

    @property
    def order(self) -> list[str]:
        return list(self._order)

    @property
    def candidates(self) -> list[str]:
        return list(self._candidates)

    @property
    def fixed_batch(self) -> int | None:
        return self._fixed_batch

    def op_type(self, name: str) -> str:
        entry = self.producers.get(name)
        return entry[1].op_type if entry is not None else INPUT_OP_TYPE

    def quantize_node(self, name: str) -> onnx.NodeProto | None:
        """The QuantizeLinear of the QuantizeLinear -> DequantizeLinear pair that outputs `name`, if any."""
        dequantize = self.producers.get(name)
        if dequantize is None or dequantize[1].op_type != "DequantizeLinear" or not dequantize[1].input:
            return None
        quantize = self.producers.get(dequantize[1].input[0])
        return quantize[1] if quantize is not None and quantize[1].op_type == "QuantizeLinear" else None

    def quantizer_input(self, name: str) -> str | None:
        """The float tensor entering the QuantizeLinear whose DequantizeLinear outputs `name` (the pair the
        QDQ quantizer inserts), None when `name` is not such an output."""
        dequantize = self.producers.get(name)
        if dequantize is None or dequantize[1].op_type != "DequantizeLinear" or not dequantize[1].input:
            return None
        quantize = self.producers.get(dequantize[1].input[0])
        if quantize is None or quantize[1].op_type != "QuantizeLinear" or not quantize[1].input:
            return None
        source = quantize[1].input[0]
        return source if self.types.get(source) in ORT_FLOAT_TYPES else None

    def feeds(self, feeds: Feeds) -> dict[str, np.ndarray]:
        """The batch's arrays for this model's graph inputs."""
        return bind_feeds(feeds, self.graph_inputs, self.role)

    def capture(self, feeds: Feeds, names: Collection[str]) -> dict[str, np.ndarray]:
        """Run one batch and return the named tensors (graph inputs are returned as fed). After `narrow`,
        the arrays are buffers that the next capture overwrites."""
        bound = self.feeds(feeds)
        wanted = [name for name in names if name not in bound]
        runner = self._runner
        try:
            if runner is not None and set(wanted) <= set(runner.outputs):
                values = runner.run(bound)
                captured = {name: values[name] for name in wanted}
            else:
                out = self.session.run(wanted, bound) if wanted else []  # [] would mean "every output"
                captured = dict(zip(wanted, (np.asarray(v) for v in out), strict=True))
        except Exception as exc:
            raise EngineError(f"onnxruntime failed to run the {self.role} model: {exc}") from exc
        captured.update({name: bound[name] for name in names if name in bound})
        return captured
