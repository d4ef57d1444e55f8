"""Capture of a torch.export program's layers: the program is unflattened (torch.export.unflatten) to get
its module hierarchy back, and forward hooks on the leaf modules capture each call's inputs and outputs.
Layers are named by module path; a module called more than once gets ``path#2``, ``path#3``... for its later
calls (the ids inspection, the graph view and the ONNX canonical ids give them),
and a module with several float outputs ``name[i]`` per output. The local value calls the compressed
module on the golden module's captured inputs."""

from __future__ import annotations

import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.layer_profile.accumulate import LayerPair
from worker.engine.layer_profile.cross_format import torch_call_outputs
from worker.engine.layer_profile.sides import Feeds, bind_feeds, stops_the_job
from worker.engine.loaders import TorchRunner, load_model

if TYPE_CHECKING:
    import torch


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

    call: str  # module path, or path#k for the module's k-th call (k >= 2)
    path: str
    leaf: int


class TorchSide:
    """A torch.export program, unflattened, with forward hooks on its leaf modules."""

    family: Literal["onnx", "torch"] = "torch"

    def __init__(self, path: Path, role: str, intra_op_threads: int | None = None) -> None:
        import torch

        runner = load_model(path, "torch_export", intra_op_threads=intra_op_threads)
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
        self.program_outputs = [spec.name for spec in runner.outputs]
        self.leaves = {
            name: module
            for name, module in self.module.named_modules()
            if name and next(iter(module.children()), None) is None
        }
        for name, module in self.leaves.items():
            module.register_forward_hook(partial(self._hook, name), with_kwargs=True)
        self.call_outputs = torch_call_outputs(runner.program, self.leaves)
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
        call = path if count == 0 else f"{path}#{count + 1}"
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

    @property
    def fixed_batch(self) -> int | None:
        dims = [spec.shape[0] for spec in self.inputs if spec.shape]
        fixed = {dim for dim in dims if isinstance(dim, int) and dim > 0}
        return min(fixed) if fixed else None

    def op_type(self, name: str) -> str:
        layer = self.layers[name]
        return self._types.get(layer.path, type(self.leaves[layer.path]).__name__)

    def capture(self, feeds: Feeds, names: Collection[str] | None) -> dict[str, np.ndarray]:
        """Run one batch; return the named layers' outputs (all of them when `names` is None)."""
        import torch

        bound = bind_feeds(feeds, [spec.name for spec in self.inputs], self.role)
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

    def inputs_nbytes(self) -> int:
        """Bytes of the module inputs kept from the last batch (for the local values)."""
        from torch.utils import _pytree

        leaves = _pytree.tree_leaves(list(self.last_inputs.values()))
        return sum(int(x.nbytes) for x in leaves if hasattr(x, "nbytes"))

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


class TorchLocal:
    """Calls each compressed leaf module on the inputs its golden counterpart received."""

    def __init__(self, golden: TorchSide, compressed: TorchSide, pairs: Sequence[LayerPair]) -> None:
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
                if stops_the_job(exc):
                    raise
                pair.drop_local(f"the compressed module failed on the golden inputs: {exc}")
                del self._pairs[name]
        return results
