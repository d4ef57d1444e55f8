"""Where onnxruntime's optimiser puts each weight element, and compressed weights rearranged to match.

onnxruntime rewrites the graph before running it (NCHWc blocking, transposes), so an optimised
initializer may be a rearrangement of one or more source weights. A probe, run once per model, replaces
every weight held in the side file by the numbers 1..n of its elements and optimises the graph once;
the optimised initializers then show where every element went (`probe_weight_maps`). A cell whose
changes are plain weights is rearranged the same way with numpy (`mapped_initializers`), with no
optimisation pass of its own (see `suffix_onnx`, which also uses the initializer helpers here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx


def node_key(node: onnx.NodeProto) -> tuple[object, ...]:
    return (
        node.op_type,
        node.domain,
        tuple(node.input),
        tuple(node.output),
        tuple(a.SerializeToString() for a in node.attribute),
    )


def initializer_data(init: onnx.TensorProto, side_file: np.ndarray) -> np.ndarray:
    """An initializer's bytes: inline, or a view of the side file onnxruntime wrote them to."""
    if init.data_location != 1:  # TensorProto.EXTERNAL
        return np.frombuffer(init.raw_data if init.raw_data else init.SerializeToString(), np.uint8)
    where = {entry.key: entry.value for entry in init.external_data}
    offset = int(where.get("offset", 0))
    return side_file[offset : offset + int(where["length"])]


def inline_initializer(init: onnx.TensorProto, data: np.ndarray) -> onnx.TensorProto:
    """A copy of an initializer with its bytes inline (its side file is about to go)."""
    import onnx

    if init.data_location != onnx.TensorProto.EXTERNAL:
        return init
    copy = onnx.TensorProto()
    copy.CopyFrom(init)
    del copy.external_data[:]
    copy.data_location = onnx.TensorProto.DEFAULT
    copy.raw_data = data.tobytes()
    return copy


def _with_data(init: onnx.TensorProto, values: np.ndarray) -> onnx.TensorProto:
    """A copy of a float initializer holding `values`, inline."""
    import onnx

    copy = onnx.TensorProto()
    copy.CopyFrom(init)
    del copy.external_data[:]
    del copy.float_data[:]
    copy.data_location = onnx.TensorProto.DEFAULT
    copy.raw_data = np.ascontiguousarray(values, dtype="<f4").tobytes()
    return copy


@dataclass(frozen=True)
class WeightMaps:
    """Where the golden weights' elements sit in the optimised graph's initializers (see
    probe_weight_maps)."""

    index: dict[str, np.ndarray]
    """Optimised initializer → for each of its elements, 1 + its position in the probe's numbering of all
    weights (0: padding)."""
    offsets: dict[str, int]
    sizes: dict[str, int]
    users: dict[str, list[str]]
    """Source weight → the optimised initializers that hold its elements."""
    sources: dict[str, list[str]]
    """Optimised initializer → the source weights it holds elements of."""
    covered: set[str]
    """Source weights whose every element the probe found again (only those are rearranged by numpy)."""


NO_MAPS = WeightMaps({}, {}, {}, {}, {}, set())


def probe_weight_maps(
    model: onnx.ModelProto,
    external_inits: set[str],
    optimised: Callable[[Path, str, Mapping[str, np.ndarray]], onnx.ModelProto],
    source: Path,
    folder: Path,
    golden_keys: set[tuple[object, ...]],
    golden_inits: Mapping[str, np.ndarray],
) -> WeightMaps:
    """Where onnxruntime's optimiser puts every element of each golden weight.

    A probe: every weight held in the side file is replaced by the numbers 1..n of its elements
    (globally distinct, exact in float32 below 2^24 in all), and the graph optimised once. An
    optimised initializer that differs from the golden one must then hold only such numbers (0 where
    it pads): it is a pure rearrangement (NCHWc blocking, transposes) of the weights, and a cell's
    compressed weights can be rearranged the same way with numpy. Anything else (a weight scaled by
    a fused batch norm, say) turns the probe off (`NO_MAPS`) and every cell is optimised by onnxruntime.

    `model` is the golden model, `source` its file with the weights `external_inits` in a side file,
    `optimised(file, stem, replaced)` writes <stem>.onnx/.bin in `folder` and returns the graph;
    `golden_keys` and `golden_inits` describe the optimised golden graph."""
    import onnx

    floats = [
        init
        for init in model.graph.initializer
        if init.name in external_inits and init.data_type == onnx.TensorProto.FLOAT
    ]
    offsets, total = {}, 0
    for init in floats:
        offsets[init.name] = total
        total += int(np.prod(init.dims))
    if not floats or total >= 1 << 24:
        return NO_MAPS
    probe_values = {  # float32 holds every integer below 2^24 exactly (a float64 arange doubled the probe's peak)
        init.name: np.arange(
            offsets[init.name] + 1, offsets[init.name] + int(np.prod(init.dims)) + 1, dtype=np.float32
        ).reshape(tuple(init.dims))
        for init in floats
    }
    probe = optimised(source, "probe", probe_values)
    side_file = folder / "probe.bin"
    maps: dict[str, np.ndarray] = {}
    try:
        if {node_key(node) for node in probe.graph.node} != golden_keys:
            return NO_MAPS
        weights = np.memmap(side_file, np.uint8, mode="r") if side_file.is_file() else np.zeros(0, np.uint8)
        for init in probe.graph.initializer:
            data = initializer_data(init, weights)
            golden = golden_inits.get(init.name)
            if golden is not None and np.array_equal(golden, data):
                continue  # does not depend on any probed weight
            if init.data_type != onnx.TensorProto.FLOAT or golden is None:
                return NO_MAPS
            values = np.frombuffer(data.tobytes(), np.float32)
            index = values.astype(np.int32)  # < 2^24
            if not (np.array_equal(index, values) and index.min() >= 0 and index.max() <= total):
                return NO_MAPS
            maps[init.name] = index
        del weights
    finally:
        (folder / "probe.onnx").unlink(missing_ok=True)
        side_file.unlink(missing_ok=True)
    ends = {name: offsets[name] + int(probe_values[name].size) for name in offsets}
    seen = np.zeros(total + 1, dtype=bool)
    users: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    names = list(offsets)  # in increasing offset order
    starts = np.array([offsets[name] for name in names])
    for derived, index in maps.items():
        seen[index] = True
        held = np.unique(np.searchsorted(starts, index[index > 0] - 1, side="right") - 1)
        sources[derived] = [names[k] for k in held]
        for name in sources[derived]:
            users.setdefault(name, []).append(derived)
    covered = {name for name in offsets if seen[offsets[name] + 1 : ends[name] + 1].all()}
    sizes = {name: ends[name] - offsets[name] for name in offsets}
    return WeightMaps(maps, offsets, sizes, users, sources, covered)


def _golden_value(model: onnx.ModelProto, name: str) -> np.ndarray:
    from onnx import numpy_helper

    init = next(i for i in model.graph.initializer if i.name == name)
    return numpy_helper.to_array(init)


def mapped_initializers(
    maps: WeightMaps, arrays: Mapping[str, np.ndarray], golden: onnx.ModelProto, model: onnx.ModelProto
) -> dict[str, onnx.TensorProto]:
    """The initializers of the optimised golden graph `golden` that `arrays` (new values of weights of
    the source `model`) change, rearranged as the probe showed, inline."""
    golden_inits = {init.name: init for init in golden.graph.initializer}
    own: dict[str, onnx.TensorProto] = {}
    for derived in sorted({d for name in arrays for d in maps.users.get(name, [])}):
        index = maps.index[derived]
        values = np.zeros(index.shape, dtype=np.float32)
        for name in maps.sources[derived]:
            offset = maps.offsets[name]
            inside = index > offset
            inside &= index <= offset + maps.sizes[name]
            source = arrays[name] if name in arrays else _golden_value(model, name)
            values[inside] = np.asarray(source, dtype=np.float32).reshape(-1)[index[inside] - offset - 1]
        own[derived] = _with_data(golden_inits[derived], values)
    return own
