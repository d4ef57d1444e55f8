"""Compression of ONNX models by editing the graph: new weight initializers, fake-quant nodes on outputs.

A layer is a weight-consuming node (Conv, Gemm, MatMul with a constant operand, LSTM / GRU / RNN,
Gather on a constant 2-D table = embedding), grouped by the torch module it came from when the
exporter recorded it (node metadata "pkg.torch.onnx.name_scopes", so a torch model and its ONNX export
get the same layer names), else by node. A weight is the value the node consumes: an initializer, or a
constant sub-graph (Transpose / Slice / Concat... of initializers, as the dynamo exporter writes LSTM
weights) evaluated once with onnx's reference evaluator. A compressed weight becomes an initializer fed
to the node directly; initializers used as is are replaced in place, so a tensor shared by two layers is
compressed once. Outputs are transformed with standard ops inserted after the layer: fake quantization
as Mul(1/scale) → Round → Add(zero) → Clip → Sub(zero) → Mul(scale) (torch's fake-quant formula), casts
as Cast(fp16|bf16) → Cast(float). Each variant runs in its own onnxruntime session. Finding the layers and their tensors is
`onnx_layers.OnnxLayerFinder`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from worker.engine.compression import ops
from worker.engine.compression.layers import LayerSpec, finish_layers
from worker.engine.compression.model import (
    Chains,
    CompressibleModel,
    Feeds,
    batches,
    digest_arrays,
)
from worker.engine.compression.onnx_layers import OnnxLayerFinder
from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.loaders import OnnxRunner
from worker.engine.types import Runner, TensorSpec

if TYPE_CHECKING:
    import onnx


class OnnxCompressible(CompressibleModel):
    """An ONNX model (weights in memory) as a `CompressibleModel`."""

    backend = "onnx"

    def __init__(self, model: onnx.ModelProto, *, intra_op_threads: int | None = None) -> None:
        self.model = model
        self.notes: list[str] = []
        self._threads = intra_op_threads
        finder = OnnxLayerFinder(model)
        raw = finder.discover()
        finder.evaluate([v for v, _ in finder.tensors.values()])
        self._consumers = finder.consumers
        self._values = finder.values
        self._tensors = finder.tensors
        """key → (value name, index into that value) of every weight / bias tensor."""
        self._raw = {layer.name: layer for layer in raw}
        self._layers = finish_layers(
            [
                LayerSpec(
                    name=layer.name,
                    type=layer.type,
                    weights=layer.weights,
                    biases=layer.biases,
                    channel_groups=layer.groups,
                    output_channel_axis=layer.output_channel_axis,
                )
                for layer in raw
            ]
        )
        self._outputs_of = {layer.name: finder.layer_outputs(layer) for layer in raw}
        self._golden_runner: OnnxRunner | None = self._session(model.SerializeToString())
        self._specs = (self._golden_runner.inputs, self._golden_runner.outputs)
        self._augmented: OnnxRunner | None = None
        self._prepared = False

    @classmethod
    def from_path(cls, path: Path, **kwargs: Any) -> OnnxCompressible:
        import onnx

        try:
            model = onnx.load(str(path), load_external_data=True)
        except Exception as exc:  # protobuf decode errors, missing external data...
            raise ModelLoadError(f"onnx could not load {Path(path).name}: {exc}") from exc
        return cls(model, **kwargs)

    # ---------------------------------------------------------------------------------- protocol

    @property
    def inputs(self) -> list[TensorSpec]:
        return self._specs[0]

    @property
    def outputs(self) -> list[TensorSpec]:
        return self._specs[1]

    def layers(self) -> list[LayerSpec]:
        return self._layers

    def read(self, key: str) -> torch.Tensor:
        value, index = self._tensors[key]
        array = self._values[value][index] if index else self._values[value]
        return torch.from_numpy(np.array(array, dtype=np.float32, copy=True))

    def tensor_value(self, key: str) -> tuple[str, tuple[Any, ...] | None]:
        """The value (initializer or constant) a weight / bias key lives in, and its index there (None when
        the key is the whole value)."""
        value, index = self._tensors[key]
        return value, (index or None)

    def consumers_of(self, value: str) -> list[onnx.NodeProto]:
        """The nodes reading a value."""
        return [self.model.graph.node[i] for i in self._consumers.get(value, [])]

    @property
    def threads(self) -> int | None:
        return self._threads

    def output_keys(self, layer: str) -> list[str]:
        return list(self._outputs_of.get(layer, []))

    def run(self, feeds: Feeds) -> dict[str, np.ndarray]:
        return self._golden.run(feeds)

    def prepare(self, sample: Feeds) -> None:
        """Count MACs per layer (inspection's ONNX rules at the sample's shapes) and find the largest tensor
        one sample writes."""
        if self._prepared:
            return
        self._prepared = True
        from worker.engine.inspection.onnx_macs import onnx_shape_facts

        shapes = {
            spec.name: list(np.asarray(sample[spec.name]).shape)
            for spec in self.inputs
            if spec.name in sample
        }
        try:
            facts = onnx_shape_facts(self.model, shapes)
        except Exception as exc:  # MACs are optional metadata
            self.notes.append(f"MACs not counted: {exc}")
            return
        self.notes.extend(facts.notes)
        self.largest_activation_bytes = facts.largest_value_bytes
        macs = facts.macs
        if macs is None:
            return
        for layer in self._layers:
            values = [macs[i] for i in self._raw[layer.name].scope_nodes]
            layer.macs = None if any(v is None for v in values) else sum(v for v in values if v is not None)

    def collect_stats(
        self, layers: Sequence[str], feeds: Feeds, batch_size: int, histogram: bool
    ) -> dict[tuple[str, str], ops.ActivationStats]:
        runner = self._augmented_runner()
        names = [(layer, key) for layer in layers for key in self.output_keys(layer)]
        stats = {pair: ops.ActivationStats() for pair in names}
        passes = [ops.ActivationStats.update_range] + (
            [ops.ActivationStats.update_histogram] if histogram else []
        )
        for update in passes:
            for batch in batches(feeds, batch_size):
                values = runner.run(batch)
                for layer, key in names:
                    array = values[key]
                    if np.issubdtype(array.dtype, np.floating):
                        update(stats[(layer, key)], array.astype(np.float32, copy=False))
        return stats

    def _augmented_runner(self) -> OnnxRunner:
        import onnx

        if self._augmented is None:
            augmented = onnx.ModelProto()
            augmented.CopyFrom(self.model)
            existing = {o.name for o in augmented.graph.output}
            wanted = dict.fromkeys(
                key for keys in self._outputs_of.values() for key in keys if key not in existing
            )
            augmented.graph.output.extend(onnx.ValueInfoProto(name=name) for name in wanted)
            self._augmented = self._session(augmented.SerializeToString())
        return self._augmented

    def open_session(self, data: bytes) -> OnnxRunner:
        """A session of another graph (e.g. screening's probe) with this model's session settings."""
        return self._session(data)

    def _session(self, data: bytes) -> OnnxRunner:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if self._threads is not None:
            options.intra_op_num_threads = self._threads
        try:
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's pybind errors share no public base class
            raise EngineError(f"onnxruntime could not load the (compressed) ONNX model: {exc}") from exc
        return OnnxRunner(session)

    def build(self, tensors: Mapping[str, torch.Tensor], chains: Chains) -> onnx.ModelProto:
        """A copy of the model with `tensors` written and `chains` inserted after the layers' outputs."""
        import onnx
        from onnx import numpy_helper

        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        graph = model.graph
        arrays: dict[str, np.ndarray] = {}
        for key, tensor in tensors.items():
            value, index = self._tensors[key]
            if value not in arrays:
                arrays[value] = np.array(self._values[value], copy=True)
            target = arrays[value]
            if index:
                target[index] = tensor.numpy().astype(target.dtype)
            else:
                arrays[value] = tensor.numpy().astype(target.dtype).reshape(target.shape)
        inits = {init.name: init for init in graph.initializer}
        for value, array in arrays.items():
            if value in inits:
                inits[value].CopyFrom(numpy_helper.from_array(array, value))
                continue
            new_name = f"{value}__kneeboard"
            graph.initializer.append(numpy_helper.from_array(array, new_name))
            for consumer in self._consumers.get(value, []):
                node = graph.node[consumer]
                for pos, name in enumerate(node.input):
                    if name == value:
                        node.input[pos] = new_name
        if chains:
            _insert_chains(graph, chains)
        return model

    @property
    def _golden(self) -> OnnxRunner:
        if self._golden_runner is None:
            self._golden_runner = self._session(self.model.SerializeToString())
        return self._golden_runner

    def release_sessions(self) -> None:
        """Close the golden model's sessions (made again when next needed). A session holds about four times
        the model's weights (ResNet-18 shape: 206 MiB for 45 MiB of weights, measured), which a sensitivity
        scan from the golden prefix does not need once the golden outputs are known."""
        for runner in (self._golden_runner, self._augmented):
            if runner is not None:
                runner.close()
        self._golden_runner = self._augmented = None

    @contextmanager
    def session(self, tensors: Mapping[str, torch.Tensor], chains: Chains) -> Iterator[Runner]:
        if not tensors and not chains:
            yield self._golden
            return
        runner = self._session(self.build(tensors, chains).SerializeToString())
        try:
            yield runner
        finally:
            runner.close()

    def weights_digest(self) -> str:
        return digest_arrays([self._values[v] for v in sorted({v for v, _ in self._tensors.values()})])


def _insert_chains(graph: onnx.GraphProto, chains: Chains) -> None:
    """Rename each transformed output to <name>__raw at its producer and insert the chain's nodes
    right after the producer, ending in the original name (so consumers and graph outputs are unchanged)."""
    from onnx import TensorProto, helper, numpy_helper

    per_output = {key: chain for per_key in chains.values() for key, chain in per_key.items()}
    nodes = list(graph.node)
    del graph.node[:]
    counter = 0
    for node in nodes:
        renamed = []
        for pos, out in enumerate(node.output):
            if out in per_output:
                node.output[pos] = f"{out}__raw"
                renamed.append(out)
        graph.node.append(node)
        for out in renamed:
            current = f"{out}__raw"
            chain = per_output[out]
            for step, (kind, value) in enumerate(chain):
                last = step == len(chain) - 1
                target = out if last else f"{out}__kb{step}"
                prefix = f"kneeboard_{counter}"
                counter += 1
                if kind == "cast":
                    low = TensorProto.FLOAT16 if value == "fp16" else TensorProto.BFLOAT16
                    graph.node.append(helper.make_node("Cast", [current], [f"{prefix}_low"], to=low))
                    graph.node.append(
                        helper.make_node("Cast", [f"{prefix}_low"], [target], to=TensorProto.FLOAT)
                    )
                else:
                    q: ops.ActivationQParams = value
                    scale = np.float32(q.scale)
                    consts = {
                        "inv": np.float32(1.0) / scale,
                        "zero": np.float32(q.zero_point),
                        "lo": np.float32(0.0),
                        "hi": np.float32(q.qmax),
                        "scale": scale,
                    }
                    for label, number in consts.items():
                        graph.initializer.append(
                            numpy_helper.from_array(np.array(number, dtype=np.float32), f"{prefix}_{label}")
                        )
                    chain_nodes = [
                        ("Mul", [current, f"{prefix}_inv"], f"{prefix}_scaled"),
                        ("Round", [f"{prefix}_scaled"], f"{prefix}_rounded"),
                        ("Add", [f"{prefix}_rounded", f"{prefix}_zero"], f"{prefix}_shifted"),
                        ("Clip", [f"{prefix}_shifted", f"{prefix}_lo", f"{prefix}_hi"], f"{prefix}_clipped"),
                        ("Sub", [f"{prefix}_clipped", f"{prefix}_zero"], f"{prefix}_centred"),
                        ("Mul", [f"{prefix}_centred", f"{prefix}_scale"], target),
                    ]
                    for op, ins, result in chain_nodes:
                        graph.node.append(helper.make_node(op, ins, [result]))
                current = target
