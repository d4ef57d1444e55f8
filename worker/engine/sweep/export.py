"""Runnable ONNX files of sweep points, each with a manifest saying what it is.

`export_point(golden, config_or_plan, out_dir, kind=...)` writes `<point id>.<kind>.onnx` and
`<point id>.<kind>.json` (the manifest) and returns (path, manifest). The kinds and which configs have
which are described in `worker.engine.sweep.runtime`:

* "simulated" → "simulated-float" (or "fp32" for the golden point): the graph the simulation ran. For
  an ONNX golden model it is the very graph `compressed()` runs (same weights, same fake-quant nodes,
  same calibration statistics), so onnxruntime reproduces the point's fidelity figures.
* "real" → the config's preferred deployable kind (`RuntimeSupport.preferred`), or any kind by name:
  real-int8-weights (int8/uint8 initializers + DequantizeLinear, bit-exact with the simulation),
  real-int8-dynamic (quantize_dynamic), real-int8-qdq (quantize_static on the calibration feeds),
  fp16 (onnxruntime.transformers.float16, float32 inputs and outputs kept). Prune / low-rank stages
  are applied first in float (they are part of every kind).

A torch golden model is compressed in torch (`compress_module`: compressed weights, output transforms
as forward hooks) and that module is exported with torch.onnx.export (dynamo, falling back to the
TorchScript exporter, as `exporters.export_onnx`; one input, one output). Exporting the compressed
module — not compressing an export of the golden one — matters: the exporter folds batch norms into
the preceding convolutions, so the ONNX graph's weights are not the weights the simulation quantized.
For the same reason real-int8-weights converts only the weights that reach the ONNX file unchanged
(by parameter name; a folded or re-laid-out weight stays float, and the manifest notes it).
Models with several inputs or outputs, or that the exporter cannot trace, raise EngineError: export them
to ONNX yourself and sweep the ONNX file.

How closely a simulated export reproduces its point: for an ONNX golden model it is the same graph in
the same runtime (equal to float precision). For a torch golden model the file runs in onnxruntime, not
torch: weight-only configs agree to about 1e-7 relative in KL, but with activation quantization tiny
kernel differences move some values across a rounding step, and the effect grows with depth (digits CNN
w8+a8: identical; EfficientNet-Lite0 w8+a8 on 16 images: KL 0.0224 in torch, 0.0218 in the export).

Manifest keys: format, file, kind, point_id, config (to_dict or None), plan (layer → to_dict, for
per-layer plans), source_sha256 (+ source_sha256_of), file_sha256, file_size_bytes, size_bytes
(computed, `cost`), size_bytes_fp32, matches_simulation, quantization (the converter's settings),
metrics: {"simulated": the point's fidelity or None, "measured": the file run in onnxruntime against the
golden model, or None without eval feeds}, onnxruntime_version, opset, notes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from worker.engine.compression import Calibration, CompressibleModel, Config
from worker.engine.compression.layers import LayerSpec
from worker.engine.compression.model import Feeds, batches, resolve
from worker.engine.compression.ops import weight_qparams
from worker.engine.errors import EngineError
from worker.engine.fidelity import FidelityParams, bind_inputs, compare_models
from worker.engine.sweep.cost import model_cost, storage_of
from worker.engine.sweep.golden import GoldenReference, SweepPoint, fidelity_summary, json_safe, point_spec
from worker.engine.sweep.runtime import (
    EXACT_KINDS,
    EXPORT_KINDS,
    ExportKind,
    float_part,
    last_weight_quant,
    runtime_support,
)
from worker.engine.types import TensorSpec

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)

MANIFEST_FORMAT = "kneeboard-sweep-export/1"

Builder = Callable[[Mapping[str, Config]], "onnx.ModelProto"]
"""plan → the ONNX graph of the golden model compressed (simulated) by that plan."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _builder(
    golden: CompressibleModel, calibration: Calibration | None, feeds: Feeds, batch_size: int
) -> tuple[Builder, list[str]]:
    """How to build the simulated ONNX graph of a plan for this golden model, and notes."""
    from worker.engine.compression.onnx_backend import OnnxCompressible

    if isinstance(golden, OnnxCompressible):

        def build_onnx(plan: Mapping[str, Config]) -> onnx.ModelProto:
            outcome, chains = resolve(golden, plan, calibration)
            proto = golden.build(outcome.tensors, chains)
            if outcome.tensors:
                _prune_dead(proto)
            return proto

        return build_onnx, []
    module = getattr(golden, "module", None)
    if golden.backend != "torch" or not isinstance(module, torch.nn.Module):
        raise EngineError(f"cannot export a {golden.backend} model to ONNX; export it yourself")
    if len(golden.inputs) != 1 or len(golden.outputs) > 1:
        raise EngineError(
            "exporting a torch model here supports one input and one output; "
            "export the model to ONNX yourself and sweep the ONNX file"
        )
    sample = np.asarray(next(iter(bind_inputs(feeds, golden.inputs).values())))[:2]
    input_name = golden.inputs[0].name
    output_name = golden.outputs[0].name if golden.outputs else "output"

    def build_torch(plan: Mapping[str, Config]) -> onnx.ModelProto:
        import onnx

        from worker.engine.exporters import export_onnx
        from worker.engine.sweep.torch_copy import materialize, plain_module, private_copy

        outcome, chains = resolve(golden, plan, calibration)
        # a .pt2 golden model is an unflattened module: neither deep-copyable nor exportable as it is
        work = private_copy(module)
        materialize(work)
        work = plain_module(work)
        params = dict(work.named_parameters(remove_duplicate=False))
        with torch.no_grad():
            for key, value in outcome.tensors.items():
                params[key].copy_(value.to(params[key].dtype))
        for layer, per_key in chains.items():
            submodule = work.get_submodule(layer)
            submodule.register_forward_hook(_ExportableChains(per_key))
        with tempfile.TemporaryDirectory(prefix="kneeboard-sweep-") as tmp:
            try:
                path = export_onnx(work, sample, Path(tmp) / "model.onnx", input_name, output_name)
                return onnx.load(str(path))
            except Exception as exc:  # exporter failures share no base class
                raise EngineError(f"torch.onnx.export failed for this model: {exc}") from exc

    return build_torch, ["compressed in torch and exported with torch.onnx.export"]


class _ExportableChains:
    """A forward hook applying a layer's output transforms (`layers.output_transforms`) with plain
    arithmetic the ONNX exporters translate: torch's fake-quant formula
    (clamp(round(x · (1/scale)) + zero, 0, qmax) − zero) · scale, the same op sequence the ONNX backend
    inserts (torch.fake_quantize_* itself cannot be traced by torch.export), and fp16 / bf16 casts."""

    def __init__(self, per_key: Mapping[str, list[tuple[str, Any]]]) -> None:
        self.per_key = dict(per_key)

    def __call__(self, _module: Any, _args: Any, output: Any) -> Any:
        from torch.utils import _pytree

        flat, spec = _pytree.tree_flatten(output)
        for key, chain in self.per_key.items():
            flat[int(key)] = self._apply(flat[int(key)], chain)
        return _pytree.tree_unflatten(flat, spec)

    @staticmethod
    def _apply(x: torch.Tensor, chain: list[tuple[str, Any]]) -> torch.Tensor:
        if not x.is_floating_point():
            return x
        for kind, value in chain:
            if kind == "cast":
                x = x.to(torch.float16 if value == "fp16" else torch.bfloat16).to(torch.float32)
                continue
            scale = torch.tensor(value.scale, dtype=torch.float32)
            inv = torch.tensor(1.0, dtype=torch.float32) / scale
            zero = torch.tensor(float(value.zero_point), dtype=torch.float32)
            q = torch.clamp(torch.round(x * inv) + zero, 0.0, float(value.qmax))
            x = (q - zero) * scale
        return x


def _source_digest(golden: CompressibleModel) -> tuple[str, str]:
    proto = getattr(golden, "model", None)
    if golden.backend == "onnx" and proto is not None:
        return hashlib.sha256(proto.SerializeToString()).hexdigest(), "serialized ONNX ModelProto"
    return golden.weights_digest(), "Kneeboard weights digest (no model file)"


def export_point(
    golden: CompressibleModel,
    config_or_plan: Any,
    out_dir: Path,
    *,
    kind: str = "simulated",
    calibration: Calibration | Feeds | None = None,
    calibration_feeds: Feeds | None = None,
    eval_feeds: Feeds | None = None,
    labels: np.ndarray | None = None,
    point: SweepPoint | None = None,
    reference: GoldenReference | None = None,
    batch_size: int = 64,
    source_sha256: str | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Write a runnable ONNX file of a point and its manifest (see the module docstring).

    kind: "simulated", "real" (the config's preferred deployable kind) or an ExportKind.
    calibration / calibration_feeds: activation statistics (a Calibration of `golden`) or feeds, for
    activation configs and real-int8-qdq; without them the evaluation feeds calibrate (noted).
    eval_feeds (+ labels): run the file in onnxruntime and store its measured fidelity against the
    golden model (`reference`: golden outputs already computed on those feeds). point: the evaluated
    point, whose fidelity is stored as the simulated metrics. source_sha256: the golden file's sha256
    when the caller knows it (else a digest of the loaded model).
    """
    notes: list[str] = []
    if calibration is None:
        calibration = calibration_feeds
    if calibration is None and eval_feeds is not None:
        calibration = eval_feeds
        notes.append("calibrated on the evaluation feeds")
    if calibration is None:
        raise EngineError("export_point needs calibration or evaluation feeds (a sample input at least)")
    calib = (
        calibration
        if isinstance(calibration, Calibration)
        else Calibration(golden, bind_inputs(calibration, golden.inputs), batch_size)
    )
    if calib.model is not golden:
        raise EngineError("the calibration was computed on another model")
    spec = point_spec(golden, config_or_plan)
    support = runtime_support(spec.plan, [layer.name for layer in golden.layers()])
    chosen = _choose_kind(kind, spec.plan, support.real_kinds)
    notes.insert(
        0,
        "simulated: compressed weights in float32, fake-quant / cast nodes after layer outputs"
        if chosen == "simulated-float"
        else f"{chosen}: " + "; ".join(support.notes),
    )
    build, build_notes = _builder(golden, calib, calib.feeds, batch_size)
    notes.extend(build_notes)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{_slug(spec.id)}.{chosen}.onnx"
    quantization: dict[str, Any] = {}
    if chosen in ("fp32", "simulated-float"):
        _save(build(spec.plan), path)
    elif chosen == "real-int8-weights":
        proto = build(spec.plan)
        quantization = _int8_weights(proto, golden.layers(), golden.read, spec.plan, notes)
        _save(proto, path)
    else:
        float_plan = {name: part for name, config in spec.plan.items() if (part := float_part(config))}
        base = build(float_plan)
        config = next(iter(spec.plan.values()))
        if chosen == "fp16":
            quantization = _fp16(base, path)
        elif chosen == "real-int8-dynamic":
            quantization = _dynamic(base, path, config)
        else:
            quantization = _qdq(base, path, config, calib.feeds, calib.batch_size, notes)
    cost = model_cost(golden, spec.plan)
    source, source_of = (source_sha256, "file") if source_sha256 else _source_digest(golden)
    measured = None
    if eval_feeds is not None:
        if reference is None or reference.batch_size != batch_size or reference.model is not golden:
            reference = GoldenReference(golden, eval_feeds, batch_size)
        runner = ort_runner(path)
        try:
            report = compare_models(
                reference, runner, eval_feeds, labels, FidelityParams(batch_size=batch_size)
            )
        finally:
            runner.close()
        measured = fidelity_summary(report)
    import onnxruntime

    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "file": path.name,
        "kind": chosen,
        "point_id": spec.id,
        **{k: v for k, v in spec.to_dict().items() if k != "id"},
        "source_sha256": source,
        "source_sha256_of": source_of,
        "file_sha256": sha256_file(path),
        "file_size_bytes": path.stat().st_size,
        "size_bytes": cost.size_bytes,
        "size_bytes_fp32": cost.size_bytes_fp32,
        "matches_simulation": chosen in EXACT_KINDS,
        "quantization": quantization,
        "metrics": {"simulated": None if point is None else point.fidelity, "measured": measured},
        "onnxruntime_version": onnxruntime.__version__,
        "opset": _opset(path),
        "notes": notes,
    }
    manifest = json_safe(manifest)
    path.with_suffix(".json").write_text(json.dumps(manifest, indent=2, allow_nan=False))
    return path, manifest


def _choose_kind(kind: str, plan: Mapping[str, Config], real: tuple[ExportKind, ...]) -> ExportKind:
    simulated: ExportKind = "fp32" if not plan else "simulated-float"
    if kind == "simulated":
        return simulated
    if kind == "real":
        if not real:
            raise EngineError(
                "this configuration has no real runtime form (see runtime_support); export 'simulated'"
            )
        return real[0]
    if kind not in EXPORT_KINDS:
        raise EngineError(
            f"unknown export kind {kind!r}; expected simulated, real or one of {list(EXPORT_KINDS)}"
        )
    if kind != simulated and kind not in real:
        raise EngineError(f"{kind} is not available for this configuration; available: {[simulated, *real]}")
    return kind


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:120]


def _save(proto: onnx.ModelProto, path: Path) -> None:
    import onnx

    onnx.save(proto, str(path))


def _opset(path: Path) -> int | None:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return next((int(o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def ort_runner(path: Path) -> Any:
    from worker.engine.loaders import load_model

    return load_model(path, "onnx", intra_op_threads=1)


# --------------------------------------------------------------------------------- real int8 weights


_SLICE = re.compile(r"^(.*)\[(\d+)\]$")
"""Weight names of recurrent layers: one tensor per direction, "<value>[<direction>]"."""


def _int8_weights(
    proto: onnx.ModelProto,
    layers: list[LayerSpec],
    read: Callable[[str], torch.Tensor],
    plan: Mapping[str, Config],
    notes: list[str],
) -> dict[str, Any]:
    """Replace each quantized weight initializer of `proto` (the simulated graph) by its integers and
    a DequantizeLinear node. The integers are round(w_final / scale) + zero point with the scale and
    zero point the simulation used (computed from the weight as it was before its last quantization
    stage), so DequantizeLinear gives back the simulated weight exactly. A weight is found by name
    (the initializer the simulation wrote, or the torch parameter name); one that is missing, has
    another shape, or does not dequantize exactly to its value in the graph (e.g. a batch norm was
    folded into it by the exporter) stays float32, and `notes` says so.

    A recurrent weight (directions × rows × columns, one simulated tensor per direction) becomes one
    DequantizeLinear too: per tensor with one scale per direction (axis 0), or per channel when there
    is a single direction; per channel with two directions would need blocked scales: left in float."""
    from onnx import helper, numpy_helper

    from worker.engine.compression.configs import Schedule
    from worker.engine.compression.layers import compress_tensors

    opset = next((int(o.version) for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
    graph = proto.graph
    inits = {init.name: init for init in graph.initializer}
    claimed: set[str] = set()
    new_nodes: list[onnx.NodeProto] = []
    converted: list[str] = []
    left: list[str] = []
    for layer in layers:
        config = plan.get(layer.name)
        found = None if config is None else last_weight_quant(config)
        if config is None or found is None:
            continue
        index, wq = found
        prefix = tuple(config.stages[:index]) if isinstance(config, Schedule) else ()
        before = compress_tensors(layers, {layer.name: Schedule(prefix)}, read).tensors if prefix else {}
        groups: dict[str, list[Any]] = {}
        for spec in layer.weights:
            if spec.key in claimed:
                continue
            claimed.add(spec.key)
            match = _SLICE.match(spec.name)
            value = match.group(1) if match and spec.key == spec.name else spec.name
            groups.setdefault(value, []).append(spec)
        for value, specs in groups.items():
            name = value if value in inits else f"{value}__kneeboard"
            if name not in inits:
                notes.append(
                    f"{layer.name}: weight {value} is not an initializer of the graph; left in float"
                )
                left.append(value)
                continue
            final = numpy_helper.to_array(inits[name]).astype(np.float32)
            sliced = len(specs) != 1 or specs[0].name != value
            expected = (len(specs), *specs[0].shape) if sliced else specs[0].shape
            if tuple(final.shape) != tuple(expected):
                notes.append(f"{layer.name}: {value} has another layout in the graph; left in float")
                left.append(value)
                continue
            if sliced and wq.per_channel and len(specs) > 1:
                notes.append(
                    f"{layer.name}: {value} needs blocked scales (per channel, several directions); left in float"
                )
                left.append(value)
                continue
            qparams = [
                weight_qparams(
                    before.get(spec.key, read(spec.key)),
                    wq.bits,
                    wq.symmetric,
                    wq.per_channel,
                    spec.quant_axis,
                )
                for spec in specs
            ]
            qmin, qmax = qparams[0][2], qparams[0][3]
            if wq.per_channel:
                axis = specs[0].quant_axis % len(specs[0].shape) + (1 if sliced else 0)
                scale = qparams[0][0].numpy().astype(np.float32)
                zero = qparams[0][1].numpy().astype(np.int32)
            elif sliced:
                axis = 0
                scale = np.array([float(q[0]) for q in qparams], dtype=np.float32)
                zero = np.array([int(q[1]) for q in qparams], dtype=np.int32)
            else:
                axis = None
                scale = qparams[0][0].numpy().astype(np.float32).reshape(())
                zero = qparams[0][1].numpy().astype(np.int32).reshape(())
            if axis is not None and opset < 13:
                notes.append(f"{layer.name}: per-axis DequantizeLinear needs opset 13; {value} left in float")
                left.append(value)
                continue
            shape = [1] * final.ndim
            if axis is not None:
                shape[axis] = -1
            s_b, z_b = scale.reshape(shape), zero.reshape(shape)
            q = np.clip(np.round(final / s_b) + z_b, qmin, qmax)
            back = ((q.astype(np.int32) - z_b).astype(np.float32) * s_b).astype(np.float32)
            if not np.array_equal(back, final):
                diff = float(np.max(np.abs(back - final)))
                notes.append(
                    f"{layer.name}: {value} in the graph is not the quantized weight (max difference "
                    f"{diff:.3g}; e.g. a batch norm folded into it); left in float"
                )
                left.append(value)
                continue
            dtype = np.int8 if wq.symmetric else np.uint8
            q_name, s_name, z_name = f"{name}__int", f"{name}__scale", f"{name}__zero_point"
            graph.initializer.remove(inits[name])
            graph.initializer.extend(
                [
                    numpy_helper.from_array(q.astype(dtype), q_name),
                    numpy_helper.from_array(scale, s_name),
                    numpy_helper.from_array(zero.astype(dtype), z_name),
                ]
            )
            node = helper.make_node("DequantizeLinear", [q_name, s_name, z_name], [name], name=f"{name}__dq")
            if axis is not None:
                node.attribute.append(helper.make_attribute("axis", axis))
            new_nodes.append(node)
            for graph_input in list(graph.input):
                if graph_input.name == name:
                    graph.input.remove(graph_input)
            converted.append(value)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(new_nodes + nodes)
    return {"method": "int8 initializers + DequantizeLinear", "weights": converted, "left_float": left}


def _prune_dead(proto: onnx.ModelProto) -> int:
    """Drop nodes whose outputs nothing uses and initializers no node uses (e.g. the constant
    sub-graph a recurrent weight was computed from, once the compressed weight replaces it); returns
    the number of initializers removed."""
    graph = proto.graph

    def used_by(nodes: Any) -> set[str]:
        names: set[str] = set()
        for node in nodes:
            names.update(i for i in node.input if i)
            for attribute in node.attribute:  # sub-graphs may read outer values
                subgraphs = [attribute.g] if attribute.type == 5 else list(attribute.graphs)
                for sub in subgraphs:
                    names |= used_by(sub.node)
        return names

    outputs = {o.name for o in graph.output}
    while True:
        used = used_by(graph.node) | outputs
        dead = [node for node in graph.node if not any(o in used for o in node.output if o)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    used = used_by(graph.node) | outputs
    unused = [init for init in graph.initializer if init.name not in used]
    for init in unused:
        graph.initializer.remove(init)
    return len(unused)


# ----------------------------------------------------------------------------- onnxruntime converters


@contextmanager
def _quiet() -> Iterator[None]:
    """onnxruntime.quantization logs advice (pre-processing) on the root logger."""
    root = logging.getLogger()
    previous = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(previous)


def _fp16(base: onnx.ModelProto, path: Path) -> dict[str, Any]:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    converted = convert_float_to_float16(base, keep_io_types=True)
    _save(converted, path)
    return {"method": "onnxruntime.transformers.float16.convert_float_to_float16", "keep_io_types": True}


def _weights_of(config: Config) -> Any:
    found = last_weight_quant(config)
    if found is None:
        raise EngineError(f"{config.id} has no final weight quantization")
    return found[1]


def _dynamic(base: onnx.ModelProto, path: Path, config: Config) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    wq = _weights_of(config)
    weight_type = QuantType.QInt8 if wq.symmetric else QuantType.QUInt8
    with tempfile.TemporaryDirectory(prefix="kneeboard-sweep-") as tmp, _quiet():
        src = Path(tmp) / "float.onnx"
        _save(base, src)
        quantize_dynamic(str(src), str(path), per_channel=wq.per_channel, weight_type=weight_type)
    return {
        "method": "onnxruntime.quantization.quantize_dynamic",
        "weight_type": weight_type.name,
        "per_channel": wq.per_channel,
        "activations": "uint8, range computed per batch at run time",
    }


class _Reader:
    """A CalibrationDataReader over bound feeds (subclassed lazily from onnxruntime's ABC)."""

    def __init__(self, feeds: Feeds, batch_size: int) -> None:
        self._batches = iter(list(batches(feeds, batch_size)))

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._batches, None)


def _proto_inputs(proto: onnx.ModelProto) -> list[TensorSpec]:
    """The graph inputs that are not initializers, as TensorSpecs (batch dimension unknown)."""
    from onnx import helper

    inits = {init.name for init in proto.graph.initializer}
    specs = []
    for value in proto.graph.input:
        if value.name in inits:
            continue
        tensor = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "float32"
        specs.append(TensorSpec(value.name, (None, *dims[1:]) if dims else (), dtype))
    return specs


def _qdq(
    base: onnx.ModelProto, path: Path, config: Config, feeds: Feeds, batch_size: int, notes: list[str]
) -> dict[str, Any]:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    wq = _weights_of(config)
    aq = storage_of(config).activation_quant
    assert aq is not None
    extra: dict[str, Any] = {}
    method = CalibrationMethod.MinMax
    if aq.calibration == "percentile":
        method = CalibrationMethod.Percentile
        extra["CalibPercentile"] = aq.percentile
    elif aq.calibration == "mse":
        notes.append("onnxruntime has no MSE calibration: MinMax used for the QDQ export")
    weight_type = QuantType.QInt8 if wq.symmetric else QuantType.QUInt8

    class Reader(_Reader, CalibrationDataReader):
        pass

    feeds = bind_inputs(feeds, _proto_inputs(base))
    with tempfile.TemporaryDirectory(prefix="kneeboard-sweep-") as tmp, _quiet():
        src = Path(tmp) / "float.onnx"
        _save(base, src)
        prepared = Path(tmp) / "prepared.onnx"
        try:
            quant_pre_process(str(src), str(prepared))
        except Exception as exc:  # an optimisation only: quantize the model as is
            notes.append(f"quant_pre_process failed ({exc}); quantized without it")
            prepared = src
        quantize_static(
            str(prepared),
            str(path),
            Reader(feeds, batch_size),
            quant_format=QuantFormat.QDQ,
            per_channel=wq.per_channel,
            activation_type=QuantType.QUInt8,
            weight_type=weight_type,
            calibrate_method=method,
            extra_options=extra or None,
        )
    return {
        "method": "onnxruntime.quantization.quantize_static (QDQ)",
        "weight_type": weight_type.name,
        "activation_type": "QUInt8",
        "per_channel": wq.per_channel,
        "calibrate_method": method.name,
        "calibration_samples": len(next(iter(feeds.values()))),
    }
