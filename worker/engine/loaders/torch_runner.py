"""The torch side of `load_model`: torch.export and TorchScript archives wrapped as a `Runner`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.loaders.feeds import check_feeds
from worker.engine.types import Dim, TensorSpec

if TYPE_CHECKING:
    import torch

TORCHSCRIPT_SPEC_FILE = "kneeboard_io.json"
"""Extra file inside a TorchScript archive (torch.jit.save(_extra_files=...)) with the I/O specs:
{"inputs": [{"name", "shape", "dtype"}...], "outputs": [...]}. TorchScript records neither input
shapes nor dtypes; `exporters.export_torchscript` writes this file, other archives lack it."""


class TorchRunner:
    """Runs a torch callable (an exported program's module or a TorchScript module) on CPU.

    `flatten` turns the callable's output into a list of tensors in the order of `outputs`.
    When `outputs` are not known before the first run (TorchScript returning a dict or list without
    a spec file), they are filled in from the first result. With `dtypes_known=False` (TorchScript
    without a spec file) feeds are passed with their own dtype instead of being cast to the spec's.
    `program` keeps the ExportedProgram of a torch_export model for inspection.
    """

    def __init__(
        self,
        module: Callable[..., Any],
        inputs: list[TensorSpec],
        outputs: list[TensorSpec] | None,
        flatten: Callable[[Any], tuple[list[str], list[Any]]],
        *,
        dtypes_known: bool = True,
        program: torch.export.ExportedProgram | None = None,
    ) -> None:
        self.module = module
        self.program = program
        self._inputs = inputs
        self._outputs = outputs
        self._flatten = flatten
        self._dtypes_known = dtypes_known

    @property
    def inputs(self) -> list[TensorSpec]:
        return list(self._inputs)

    @property
    def outputs(self) -> list[TensorSpec]:
        return list(self._outputs or [])

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        arrays = check_feeds(feeds, self._inputs, cast=self._dtypes_known)
        tensors = [torch.from_numpy(np.require(array, requirements=["C", "W"])) for array in arrays]
        try:
            with torch.inference_mode():
                result = self.module(*tensors)
        except Exception as exc:  # whatever the model's own code raises
            raise EngineError(f"torch failed to run the model: {exc}") from exc
        names, values = self._flatten(result)
        if self._outputs is None:
            self._outputs = [
                _torch_value_spec(name, value) for name, value in zip(names, values, strict=True)
            ]
        if len(values) != len(self._outputs):
            raise EngineError(f"The model returned {len(values)} outputs, expected {len(self._outputs)}.")
        return {spec.name: _to_numpy(value) for spec, value in zip(self._outputs, values, strict=True)}


def _to_numpy(value: Any) -> np.ndarray:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _torch_dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _torch_dim(size: Any) -> Dim:
    """A concrete int stays an int; a symbolic size (torch.SymInt) becomes its name, e.g. 's77'."""
    return size if isinstance(size, int) else str(size)


def _torch_value_spec(name: str, value: Any) -> TensorSpec:
    """Spec of a (possibly fake) tensor; a non-tensor value gets shape () and its Python type name."""
    import torch

    if isinstance(value, torch.Tensor):
        return TensorSpec(name, tuple(_torch_dim(s) for s in value.shape), _torch_dtype_name(value.dtype))
    return TensorSpec(name, (), type(value).__name__)


def _set_threads(intra_op_threads: int | None) -> None:
    import torch

    if intra_op_threads is not None:
        torch.set_num_threads(intra_op_threads)


def torch_export_specs(program: torch.export.ExportedProgram) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """User inputs and outputs of an exported program, with shapes and dtypes from the graph's
    example metadata (node.meta['val']); symbolic sizes are named by their symbol (e.g. 's77')."""
    from torch.export.graph_signature import InputKind, OutputKind

    placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
    inputs = [
        _torch_value_spec(spec.arg.name, node.meta.get("val"))
        for spec, node in zip(program.graph_signature.input_specs, placeholders, strict=True)
        if spec.kind == InputKind.USER_INPUT
    ]
    output_node = next(node for node in program.graph.nodes if node.op == "output")
    returned = output_node.args[0]
    outputs = [
        _torch_value_spec(spec.arg.name, getattr(value, "meta", {}).get("val"))
        for spec, value in zip(program.graph_signature.output_specs, returned, strict=True)
        if spec.kind == OutputKind.USER_OUTPUT
    ]
    return inputs, outputs


def _flatten_export_output(result: Any) -> tuple[list[str], list[Any]]:
    from torch.utils import _pytree

    leaves = _pytree.tree_leaves(result)
    return [f"output_{i}" for i in range(len(leaves))], leaves


def load_torch_export(path: Path, intra_op_threads: int | None) -> TorchRunner:
    import torch

    _set_threads(intra_op_threads)
    try:
        program = torch.export.load(str(path))
        module = program.module()
        inputs, outputs = torch_export_specs(program)
    except Exception as exc:  # torch raises RuntimeError, ValueError, KeyError... depending on the damage
        raise ModelLoadError(f"torch.export.load could not load {path.name}: {exc}") from exc
    return TorchRunner(module, inputs, outputs, _flatten_export_output, program=program)


def _flatten_script_output(result: Any) -> tuple[list[str], list[Any]]:
    """A tensor -> "output"; a tuple or list -> "output_0", "output_1"...; a dict -> its keys."""
    import torch

    if isinstance(result, torch.Tensor):
        return ["output"], [result]
    if isinstance(result, dict):
        return [str(key) for key in result], list(result.values())
    if isinstance(result, tuple | list):
        return [f"output_{i}" for i in range(len(result))], list(result)
    return ["output"], [result]


def torchscript_specs(
    module: torch.jit.ScriptModule, spec_json: str | None
) -> tuple[list[TensorSpec], list[TensorSpec] | None]:
    """Input / output specs of a TorchScript module.

    With the kneeboard spec file (see TORCHSCRIPT_SPEC_FILE) they are exact. Without it the inputs
    are the tensor arguments of forward() (self skipped) with shape () - meaning unknown rank, since
    TorchScript does not record it - and dtype float32 by assumption; outputs follow forward()'s return
    type: Tensor -> "output", Tuple[n] -> "output_0".."output_{n-1}", anything else (dict, list) -> None,
    i.e. learnt from the first run.
    """
    if spec_json:
        data = json.loads(spec_json)
        return [_spec_from_json(item) for item in data["inputs"]], [
            _spec_from_json(item) for item in data["outputs"]
        ]
    schema = module.forward.schema  # type: ignore[attr-defined]
    inputs = [
        TensorSpec(arg.name, _script_shape(arg.type), "float32")
        for arg in schema.arguments[1:]
        if arg.type.kind() == "TensorType"
    ]
    return inputs, _script_outputs(schema.returns)


def _spec_from_json(item: Mapping[str, Any]) -> TensorSpec:
    return TensorSpec(str(item["name"]), tuple(item["shape"]), str(item["dtype"]))


def _script_shape(tensor_type: Any) -> tuple[Dim, ...]:
    rank = tensor_type.dim() if hasattr(tensor_type, "dim") else None
    return (None,) * rank if rank is not None else ()


def _script_outputs(returns: Sequence[Any]) -> list[TensorSpec] | None:
    if len(returns) != 1:
        return None
    kind = returns[0].type.kind()
    if kind == "TensorType":
        return [TensorSpec("output", (), "float32")]
    if kind == "TupleType":
        elements = returns[0].type.elements()
        if all(element.kind() == "TensorType" for element in elements):
            return [TensorSpec(f"output_{i}", (), "float32") for i in range(len(elements))]
    return None


def load_torchscript(path: Path, intra_op_threads: int | None) -> TorchRunner:
    import torch

    _set_threads(intra_op_threads)
    extra = {TORCHSCRIPT_SPEC_FILE: ""}
    try:
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
        module.eval()
        spec_json = extra[TORCHSCRIPT_SPEC_FILE]
        spec_text = spec_json.decode() if isinstance(spec_json, bytes) else spec_json
        inputs, outputs = torchscript_specs(module, spec_text)
    except Exception as exc:  # torch.jit.load raises RuntimeError / ValueError with the archive's problem
        raise ModelLoadError(f"torch.jit.load could not load {path.name}: {exc}") from exc
    return TorchRunner(module, inputs, outputs, _flatten_script_output, dtypes_known=bool(spec_text))
