"""torch inspection: layers from the module hierarchy, MACs from FlopCounterMode (per module for torch.export)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.engine.errors import EngineError
from worker.engine.inspection.model import LayerInfo, ModelInspection
from worker.engine.inspection.shapes import resolve_input_shapes
from worker.engine.loaders import TorchRunner, load_model
from worker.engine.types import ModelFormat, TensorSpec

if TYPE_CHECKING:
    import torch


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
    param_names: dict[str, list[str]] = field(default_factory=dict)

    def layers(self, macs: Callable[[str], int | None]) -> list[LayerInfo]:
        """Leaf modules and modules that own parameters directly, in first-use order."""
        names = list(self.types) + [name for name in self.own_params if name not in self.types]
        result = []
        for name in names:
            is_leaf = name != "" and not any(other.startswith(f"{name}.") for other in names)
            if is_leaf or self.own_params.get(name, 0):
                layer_type = self.types.get(name, "Module")
                params = self.param_names.get(name, [])
                result.append(
                    LayerInfo(
                        name or "(root)",
                        layer_type,
                        self.own_params.get(name, 0),
                        macs(name),
                        aliases=list(params),
                        param_tensors=list(params),
                    )
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


def load_torchscript_runner(path: Path) -> TorchRunner:
    """A TorchScript file loaded as the runner loads it (its module and input / output specs)."""
    return _load_torch(path, "torchscript")


def load_program(path: Path) -> torch.export.ExportedProgram:
    """The exported program of a .pt2 file, loaded as the runner loads it."""
    program = _load_torch(path, "torch_export").program
    if program is None:
        raise EngineError(f"Internal error: {path.name} loaded without its exported program.")
    return program


def inspect_torch_export(path: Path, input_shapes: Mapping[str, Sequence[int]] | None) -> ModelInspection:
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
        modules.param_names.setdefault(owner, []).append(target)
    return modules


def inspect_torchscript(path: Path, input_shapes: Mapping[str, Sequence[int]] | None) -> ModelInspection:
    """Layers from named_modules(); FlopCounterMode counts the total only, because TorchScript runs
    submodules inside its interpreter where the per-module hooks FlopCounterMode relies on never fire."""
    runner = _load_torch(path, "torchscript")
    module: Any = runner.module
    modules = _TorchModules()
    for name, submodule in module.named_modules():
        modules.types[name] = str(getattr(submodule, "original_name", type(submodule).__name__))
        own = dict(submodule.named_parameters(recurse=False))
        if own:
            modules.own_params[name] = sum(p.numel() for p in own.values())
            modules.param_names[name] = [f"{name}.{key}" if name else key for key in own]
    total_params = sum(p.numel() for p in module.parameters())
    notes = ["Per-layer MACs are not available for TorchScript; the total is counted."]
    return _torch_result(runner, modules, total_params, runner.module, input_shapes, False, notes)
