"""Sensitivity cells of an ONNX model that re-run only what is downstream of the perturbed layer.

A layer × config cell changes some weights (and, for activation configs, inserts fake-quant or cast
nodes after the layer's outputs). Every node that does not depend on a change computes exactly what the
golden model computes, so a cell only needs its *suffix* (the nodes downstream of the change) fed with
the golden values of the *cut*: the tensors that cross from the untouched prefix into the suffix (the
layer's input and every skip connection that jumps over it). Only ONNX models are split; see
`sensitivity_suffix` for torch models.

The cut is made in the graph onnxruntime actually runs, not in the ONNX file. onnxruntime rewrites the
graph before running it (measured on EfficientNet-Lite0, 1 thread: its NCHWc layout pass is 2.5× faster
than the graph without it), and the rewrite fuses across any cut one would make in the file: a residual
Add is folded into the convolution before it, which then accumulates into the skip tensor. Cutting the
ONNX file instead left that Add unfused in the suffix and changed the outputs by one float32 ulp (KL
relative difference 5e-5 on a residual CNN). So each cell's compressed model is optimised once by
onnxruntime itself (`optimized_model_filepath`, what the full re-run's session does anyway), the nodes
that differ from the optimised golden graph (changed initializers, new nodes) and everything downstream
become the suffix, and the suffix runs with graph optimisation off: the same kernels on the same values,
hence the same numbers. The golden cut tensors (possibly in onnxruntime's blocked NCHWc layout) come
from the optimised golden graph, also run as is.

Why each cell has its own suffix session rather than one per layer with the weights fed as inputs:
onnxruntime reorders and pre-packs constant weights only (the NCHWc convolutions need an initializer), so
a weight fed as an input would run through another kernel with another summation order.

Cost per cell: optimising the whole compressed model for each cell cost about what the naive loop's
session costs (ResNet-18: 0.5 s a cell). So a probe, run once, finds where onnxruntime's optimiser puts
every weight element (`suffix_weight_probe`: NCHWc blocking and transposes are rearrangements), and a cell
whose changes are plain weights rearranges them with numpy (3 ms) into the optimised golden graph;
cells with new nodes (activation fake-quant, casts) or weights the probe cannot follow are optimised by
onnxruntime. Optimised graphs keep their weights in side files, and a suffix carries only its changed
weights inline, reading the others from the golden side file. (With every weight inline, serialising
and comparing them made a ResNet-18 cell at 64 px cost more than re-running the whole model.)

Memory: `OnnxSuffixes` holds the optimised golden graph (weights on disk, in a temporary folder); a scan
keeps the golden cut tensors of all calibration batches for a group of consecutive layers, sized to a
budget (`sensitivity_suffix`).
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from worker.engine.compression.model import Chains, Feeds, batches, first_sample
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.errors import EngineError
from worker.engine.loaders import OnnxRunner
from worker.engine.sensitivity.suffix_sessions import SharedWeights, part_session, session_options
from worker.engine.sensitivity.suffix_weight_probe import (
    NO_MAPS,
    WeightMaps,
    initializer_data,
    inline_initializer,
    mapped_initializers,
    node_key,
    probe_weight_maps,
)

if TYPE_CHECKING:
    import onnx
    import torch

_SUBGRAPH_ATTRIBUTES = (5, 10)  # AttributeProto.GRAPH, GRAPHS: sub-graphs read outer values implicitly


@dataclass(frozen=True)
class CellSuffix:
    """The part of one cell's optimised compressed graph that differs from the golden one."""

    model: bytes | None
    """The suffix (serialised ModelProto, to run with optimisation off); None when the primary output
    does not depend on the change, so the cell equals the golden run."""
    cut: tuple[str, ...]
    """Golden tensors it takes (graph inputs or outputs of untouched nodes of the optimised graph)."""
    weight_bytes: int = 0
    """Bytes of the weights its session holds: its changed ones, inline (it is handed the golden ones)."""
    own: frozenset[str] = frozenset()
    """The golden weights' names it carries changed values for (not to be handed the golden ones)."""


class OnnxSuffixes:
    """The optimised golden graph of an `OnnxCompressible`, and the suffixes of its compressed variants."""

    def __init__(self, handle: OnnxCompressible, output: str, sample: Feeds) -> None:
        self.handle = handle
        self.output = output
        source = handle.model.graph
        self.supported = not any(
            attribute.type in _SUBGRAPH_ATTRIBUTES for node in source.node for attribute in node.attribute
        )
        if not self.supported:
            return
        self._folder = tempfile.TemporaryDirectory(prefix="kneeboard-suffixes-")
        self._dir = Path(self._folder.name)
        self._cells = itertools.count()
        self._external_inits: set[str] = set()
        self._maps: WeightMaps | None = None
        self.golden = self._optimised(handle.model, "golden")
        graph = self.golden.graph
        self._nodes = list(graph.node)
        self._keys = {node_key(node) for node in self._nodes}
        golden_file = self._dir / "golden.bin"
        weights = (
            np.memmap(golden_file, np.uint8, mode="r") if golden_file.is_file() else np.zeros(0, np.uint8)
        )
        self._inits = {init.name: initializer_data(init, weights) for init in graph.initializer}
        self._shared: SharedWeights | None = None
        self._shared = SharedWeights(graph.initializer, self._inits)
        self._graph_inputs = {value.name for value in graph.input} - set(self._inits)
        self._producer = {out: i for i, node in enumerate(self._nodes) for out in node.output if out}
        self._elem_types: dict[str, int] = {}
        self._sample_bytes: dict[str, int] = {}
        self._learn_values(sample)

    # ------------------------------------------------------------------------------------ sessions

    def _optimised(
        self, model: onnx.ModelProto | Path, stem: str, replaced: Mapping[str, np.ndarray] | None = None
    ) -> onnx.ModelProto:
        """The graph onnxruntime runs for `model` (its default optimisation level, this CPU's kernels),
        written to <stem>.onnx with its weights in <stem>.bin, and read back without them. `model` may
        be a file, whose initializers `replaced` overrides (onnxruntime's add_external_initializers)."""
        import onnx
        import onnxruntime as ort

        options = session_options(self.handle._threads, optimise=True)
        values = {name: ort.OrtValue.ortvalue_from_numpy(a) for name, a in (replaced or {}).items()}
        if values:  # replaced before any optimisation (add_initializer's would not be written out)
            options.add_external_initializers(list(values), list(values.values()))
        options.optimized_model_filepath = str(self._dir / f"{stem}.onnx")
        entries = {
            "session.optimized_model_external_initializers_file_name": f"{stem}.bin",
            "session.optimized_model_external_initializers_min_size_in_bytes": "1024",
            "session.disable_prepacking": "1",  # this session only writes the graph
        }
        for key, value in entries.items():
            options.add_session_config_entry(key, value)
        try:
            source = str(model) if isinstance(model, Path) else model.SerializeToString()
            ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's pybind errors share no public base class
            raise EngineError(f"onnxruntime could not load the (compressed) ONNX model: {exc}") from exc
        return onnx.load(str(self._dir / f"{stem}.onnx"), load_external_data=False)

    def _source_file(self) -> Path:
        """The golden ONNX file, weights in a side file (written once)."""
        import onnx

        path = self._dir / "source.onnx"
        if not path.is_file():
            model = onnx.ModelProto()
            model.CopyFrom(self.handle.model)  # onnx.save converts the model it is given in place
            onnx.save(
                model, str(path), save_as_external_data=True, location="source.bin", size_threshold=1024
            )  # small tensors stay inline: shape inference reads them (Reshape's shape, ReduceMean's axes)
            self._external_inits = {
                init.name
                for init in model.graph.initializer
                if init.data_location == onnx.TensorProto.EXTERNAL
            }
        return path

    def _changed_arrays(self, tensors: Mapping[str, torch.Tensor]) -> dict[str, np.ndarray]:
        """New values of the ONNX values that `tensors` change (as OnnxCompressible.build writes them)."""
        handle = self.handle
        arrays: dict[str, np.ndarray] = {}
        for key, tensor in tensors.items():
            value, index = handle._tensors[key]
            if value not in arrays:
                arrays[value] = np.array(handle._values[value], copy=True)
            target = arrays[value]
            if index:
                target[index] = tensor.numpy().astype(target.dtype)
            else:
                arrays[value] = np.ascontiguousarray(
                    tensor.numpy().astype(target.dtype).reshape(target.shape)
                )
        return arrays

    def _runner(self, data: bytes, own: frozenset[str] = frozenset()) -> OnnxRunner:
        """A session of a part of the optimised graph, handed the golden weights (`suffix_sessions`)."""
        return part_session(self._dir, data, self.handle._threads, self._shared, own)

    def _sub_model(
        self,
        source: onnx.ModelProto,
        nodes: Sequence[onnx.NodeProto],
        inputs: Sequence[str],
        outputs: Sequence[str],
        replaced: Mapping[str, onnx.TensorProto] | None = None,
    ) -> bytes:
        import onnx
        from onnx import helper

        used = {name for node in nodes for name in node.input if name}
        graph = helper.make_graph(
            nodes,
            "kneeboard_part",
            [helper.make_tensor_value_info(name, self._elem_types[name], None) for name in inputs],
            [onnx.ValueInfoProto(name=name) for name in outputs],
            initializer=[
                (replaced or {}).get(init.name, init)
                for init in source.graph.initializer
                if init.name in used
            ],
        )
        model = helper.make_model(graph, opset_imports=list(source.opset_import))
        model.ir_version = source.ir_version
        model.functions.extend(source.functions)
        return model.SerializeToString()

    def _prefix(self, outputs: Sequence[str]) -> bytes:
        """The optimised golden nodes that `outputs` depend on."""
        needed: set[int] = set()
        stack = [self._producer[name] for name in outputs if name in self._producer]
        while stack:
            index = stack.pop()
            if index not in needed:
                needed.add(index)
                stack.extend(self._producer[x] for x in self._nodes[index].input if x in self._producer)
        nodes = [self._nodes[i] for i in sorted(needed)]
        used = {name for node in nodes for name in node.input}
        return self._sub_model(self.golden, nodes, sorted(self._graph_inputs & used), outputs)

    # ------------------------------------------------------------------------------------ analysis

    def _learn_values(self, sample: Feeds) -> None:
        """Element type and bytes per sample of every value of the optimised golden graph, from a run on
        one sample."""
        from onnx import helper

        for name in self._graph_inputs:
            array = np.asarray(sample[name]) if name in sample else np.zeros(0, np.float32)
            self._elem_types[name] = helper.np_dtype_to_tensor_dtype(array.dtype)
            self._sample_bytes[name] = array[:1].nbytes
        names = [out for node in self._nodes for out in node.output if out and out not in self._inits]
        runner = self._runner(self._prefix(names))
        try:
            values = runner.run(first_sample(sample))
        finally:
            runner.close()
        for name in names:
            array = np.asarray(values[name])
            self._elem_types[name] = helper.np_dtype_to_tensor_dtype(array.dtype)
            self._sample_bytes[name] = array.nbytes

    def cut_bytes(self, names: Sequence[str]) -> int:
        """Bytes per calibration sample of these golden tensors."""
        return sum(self._sample_bytes.get(name, 0) for name in set(names))

    def cell(self, tensors: Mapping[str, torch.Tensor], chains: Chains) -> CellSuffix:
        """The suffix of the model compressed by (tensors, chains)."""
        stem = f"cell-{next(self._cells)}"
        arrays = self._changed_arrays(tensors)
        maps = self._weight_maps()
        if not chains and arrays and all(name in maps.covered for name in arrays):
            # where onnxruntime puts each weight element is known: no optimisation pass for this cell
            return self._suffix(
                self.golden, mapped_initializers(maps, arrays, self.golden, self.handle.model)
            )
        source = self._source_file()  # onnxruntime replaces only weights held in a side file
        if not chains and all(name in self._external_inits for name in arrays):
            # the golden file with the changed weights swapped in: no copy of the model per cell
            compressed = self._optimised(source, stem, arrays)
        else:  # new nodes, or weights computed in the graph: the edited copy
            compressed = self._optimised(self.handle.build(tensors, chains), stem)
        graph = compressed.graph
        side_file = self._dir / f"{stem}.bin"
        # every weight either equals the golden one (then the suffix reads it from golden.bin) or is
        # changed (then the suffix carries it inline)
        own: dict[str, onnx.TensorProto] = {}
        try:
            weights = (
                np.memmap(side_file, np.uint8, mode="r") if side_file.is_file() else np.zeros(0, np.uint8)
            )
            for init in graph.initializer:
                data = initializer_data(init, weights)
                golden = self._inits.get(init.name)
                if golden is None or not np.array_equal(golden, data):
                    own[init.name] = inline_initializer(init, data)
            del weights
        finally:
            (self._dir / f"{stem}.onnx").unlink(missing_ok=True)
            side_file.unlink(missing_ok=True)
        return self._suffix(compressed, own)

    def _suffix(self, compressed: onnx.ModelProto, own: dict[str, onnx.TensorProto]) -> CellSuffix:
        """The nodes of an optimised compressed graph that differ from the golden graph's (new nodes,
        or reading a changed weight of `own`) and everything downstream of them."""
        graph = compressed.graph
        changed = set(own)
        replaced = own | {init.name: init for init in self.golden.graph.initializer if init.name not in own}
        producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
        dirty_values: set[str] = set()
        dirty: set[int] = set()
        grew = True
        while grew:  # to a fixed point: the saved graph's node order need not be topological
            grew = False
            for i, node in enumerate(graph.node):
                if i in dirty:
                    continue
                if node_key(node) not in self._keys or any(
                    name in changed or name in dirty_values for name in node.input if name
                ):
                    dirty.add(i)
                    dirty_values.update(out for out in node.output if out)
                    grew = True
        if self.output not in dirty_values:
            return CellSuffix(None, ())
        inits = {init.name for init in graph.initializer}
        cut = sorted(
            {
                name
                for i in dirty
                for name in graph.node[i].input
                if name and name not in inits and (name not in producer or producer[name] not in dirty)
            }
        )
        missing = [name for name in cut if name not in self._elem_types]
        if missing:
            raise EngineError(f"the suffix needs tensors the golden graph does not compute: {missing}")
        nodes = [graph.node[i] for i in sorted(dirty)]
        used = {name for node in nodes for name in node.input if name in replaced}
        return CellSuffix(
            self._sub_model(compressed, nodes, cut, [self.output], replaced),
            tuple(cut),
            sum(len(own[name].raw_data) for name in used if name in own),
            frozenset(own),
        )

    def _weight_maps(self) -> WeightMaps:
        """Where onnxruntime's optimiser puts every element of each golden weight (learnt once, see
        `suffix_weight_probe.probe_weight_maps`)."""
        if self._maps is not None:
            return self._maps
        self._maps = NO_MAPS
        source = self._source_file()
        self._maps = probe_weight_maps(
            self.handle.model,
            self._external_inits,
            self._optimised,
            source,
            self._dir,
            self._keys,
            self._inits,
        )
        return self._maps

    # ------------------------------------------------------------------------------------ running

    def golden_cut_batches(
        self, names: Sequence[str], feeds: Feeds, batch_size: int
    ) -> Iterator[dict[str, np.ndarray]]:
        """The golden values of `names`, batch after batch (one pass of their prefix)."""
        wanted = list(dict.fromkeys(names))
        computed = [name for name in wanted if name not in self._graph_inputs]
        runner = self._runner(self._prefix(computed)) if computed else None
        try:
            for batch in batches(feeds, batch_size):
                values = dict(runner.run(batch)) if runner is not None else {}
                values.update(
                    {name: np.asarray(batch[name]) for name in wanted if name in self._graph_inputs}
                )
                yield values
        finally:
            if runner is not None:
                runner.close()

    def runner(self, suffix: CellSuffix) -> OnnxRunner:
        """A session of the suffix; `run` it on {name: golden value} of its cut for the primary output."""
        assert suffix.model is not None
        return self._runner(suffix.model, suffix.own)
