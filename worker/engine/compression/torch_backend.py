"""Compression of torch models: a python nn.Module, a torch.export program, or a TorchScript module.

Weights are changed in place on a private deep copy (the caller's module is never touched) and
restored bit for bit after each evaluation. Output transforms (activation fake-quant, fp16/bf16 casts)
are forward hooks on the layer's module. torch.export programs are run as
`torch.export.unflatten(program)`, whose submodules are called one by one so that hooks fire (the flat
`program.module()` inlines every layer). TorchScript modules run their submodules inside the TorchScript
interpreter, where Python hooks never fire: they support weight-only configs. Which modules are
compressible layers, and their weights by parameter name, is `torch_layers`.
"""

from __future__ import annotations

import copy
import inspect
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils import _pytree

from worker.engine.compression import ops
from worker.engine.compression.layers import LayerSpec, apply_chain, finish_layers
from worker.engine.compression.model import Chains, CompressibleModel, Feeds, batches, digest_arrays
from worker.engine.compression.torch_layers import layer_kind, layer_spec
from worker.engine.errors import EngineError
from worker.engine.loaders import TorchRunner
from worker.engine.types import Runner, TensorSpec

_CALL_SUFFIX = re.compile(r"@\d+$")


def _flatten_leaves(result: Any) -> tuple[list[str], list[Any]]:
    leaves = _pytree.tree_leaves(result)
    if len(leaves) == 1:
        return ["output"], leaves
    return [f"output_{i}" for i in range(len(leaves))], leaves


class TorchCompressible(CompressibleModel):
    """A torch model as a `CompressibleModel`. Build it with `from_module`, `from_program` or `from_script`."""

    backend = "torch"

    def __init__(
        self,
        module: nn.Module,
        types: Mapping[str, str],
        runner: TorchRunner,
        *,
        hooks_supported: bool = True,
        notes: Sequence[str] = (),
    ) -> None:
        self.module = module
        self.runner = runner
        self.hooks_supported = hooks_supported
        self.notes = list(notes)
        self._types = dict(types)
        self._params: dict[str, torch.Tensor] = {}
        self._layers = self._discover()
        self._modules = {layer.name: self._submodule(layer.name) for layer in self._layers}
        self._output_keys: dict[str, list[str]] = {}
        self._prepared = False

    # ---------------------------------------------------------------------------------- building

    @classmethod
    def from_module(cls, module: nn.Module, input_names: Sequence[str] | None = None) -> TorchCompressible:
        """A deep copy of a python module (in eval mode). Inputs are named after forward()'s parameters
        unless `input_names` are given; feeds keep their own dtypes."""
        work = copy.deepcopy(module).eval()
        names = list(input_names) if input_names is not None else _forward_arg_names(work)
        inputs = [TensorSpec(name, (), "float32") for name in names]
        runner = TorchRunner(work, inputs, None, _flatten_leaves, dtypes_known=False)
        types = {name: type(sub).__name__ for name, sub in work.named_modules()}
        return cls(work, types, runner)

    @classmethod
    def from_program(cls, program: torch.export.ExportedProgram) -> TorchCompressible:
        """A torch.export program, run as torch.export.unflatten(program) so that layer hooks fire."""
        from worker.engine.loaders import torch_export_specs

        inputs, outputs = torch_export_specs(program)
        module = torch.export.unflatten(program)
        types: dict[str, str] = {}
        for node in program.graph.nodes:
            for path, module_type in (node.meta.get("nn_module_stack") or {}).values():
                if not path or str(path).startswith("_empty_nn_module_stack"):
                    continue
                name = ".".join(_CALL_SUFFIX.sub("", part) for part in str(path).split("."))
                type_name = getattr(module_type, "__name__", str(module_type)).rsplit(".", 1)[-1]
                types.setdefault(name, type_name)
        runner = TorchRunner(module, inputs, outputs, _flatten_leaves)
        return cls(module, types, runner)

    @classmethod
    def from_runner(cls, runner: TorchRunner) -> TorchCompressible:
        """A model loaded by `loaders.load_model` (torch_export or torchscript); works on a copy."""
        if runner.program is not None:
            return cls.from_program(runner.program)
        module = runner.module
        if not isinstance(module, torch.jit.ScriptModule):
            if isinstance(module, nn.Module):
                return cls.from_module(module, [spec.name for spec in runner.inputs])
            raise EngineError(f"cannot compress a {type(module).__name__}; expected a torch module")
        return cls.from_script(module, runner)

    @classmethod
    def from_script(
        cls, module: torch.jit.ScriptModule, runner: TorchRunner | None = None
    ) -> TorchCompressible:
        work = copy.deepcopy(module)
        types = {
            name: str(getattr(sub, "original_name", type(sub).__name__)) for name, sub in work.named_modules()
        }
        if runner is not None:
            inputs, outputs, dtypes_known = runner.inputs, runner.outputs or None, True
        else:
            schema = work.forward.schema  # type: ignore[attr-defined]
            inputs = [TensorSpec(arg.name, (), "float32") for arg in schema.arguments[1:]]
            outputs, dtypes_known = None, False
        wrapped = TorchRunner(work, inputs, outputs, _flatten_leaves, dtypes_known=dtypes_known)
        note = "TorchScript runs its layers inside its interpreter: only weight configs are supported"
        return cls(work, types, wrapped, hooks_supported=False, notes=[note])

    def _submodule(self, name: str) -> Any:
        module: Any = self.module
        for part in name.split("."):
            module = getattr(module, part)
        return module

    def _discover(self) -> list[LayerSpec]:
        keys: dict[int, str] = {}
        for name, param in self.module.named_parameters(remove_duplicate=False):
            keys.setdefault(id(param), name)
            self._params.setdefault(keys[id(param)], param)
        layers: list[LayerSpec] = []
        mha_prefixes: list[str] = []
        for name, sub in self.module.named_modules():
            if not name or any(name.startswith(p) for p in mha_prefixes):
                continue
            type_name = self._types.get(name, type(sub).__name__)
            kind = layer_kind(type_name, sub)
            if kind is None:
                continue
            if kind == "mha":
                mha_prefixes.append(name + ".")
            spec = layer_spec(name, type_name, kind, sub, lambda p: keys[id(p)])
            if spec is not None:
                layers.append(spec)
        return finish_layers(layers)

    # ---------------------------------------------------------------------------------- protocol

    @property
    def inputs(self) -> list[TensorSpec]:
        return self.runner.inputs

    @property
    def outputs(self) -> list[TensorSpec]:
        return self.runner.outputs

    def layers(self) -> list[LayerSpec]:
        return self._layers

    def read(self, key: str) -> torch.Tensor:
        return self._params[key].detach().to(torch.float32).clone()

    def output_keys(self, layer: str) -> list[str]:
        return list(self._output_keys.get(layer, []))

    def run(self, feeds: Feeds) -> dict[str, np.ndarray]:
        return self.runner.run(feeds)

    def tensors(self, feeds: Feeds) -> list[torch.Tensor]:
        """The feeds as torch tensors in input order (for callers that run the module themselves)."""
        return [
            torch.from_numpy(np.require(np.asarray(feeds[spec.name]), requirements=["C", "W"]))
            for spec in self.inputs
        ]

    def prepare(self, sample: Feeds) -> None:
        """Order layers by first call, record their float outputs and count MACs, on one sample."""
        if self._prepared:
            return
        self._prepared = True
        order: list[str] = []
        leaves: dict[str, list[str]] = {}
        handles = []
        if self.hooks_supported:
            for name, module in self._modules.items():

                def pre(_m: Any, _args: Any, name: str = name) -> None:
                    if name not in order:
                        order.append(name)

                def post(_m: Any, _args: Any, output: Any, name: str = name) -> None:
                    flat = _pytree.tree_leaves(output)
                    leaves[name] = [
                        str(i)
                        for i, v in enumerate(flat)
                        if isinstance(v, torch.Tensor) and v.is_floating_point()
                    ]

                handles.append(module.register_forward_pre_hook(pre))
                handles.append(module.register_forward_hook(post))
        try:
            self.runner.run(sample)
        finally:
            for handle in handles:
                handle.remove()
        self._output_keys = leaves
        if self.hooks_supported:
            by_name = {layer.name: layer for layer in self._layers}
            missing = [layer.name for layer in self._layers if layer.name not in order]
            for name in missing:
                by_name[name].notes.append("not called by the model's forward pass on the calibration sample")
            self._layers = finish_layers([by_name[n] for n in order + missing])
        self._count_macs(sample)

    def _count_macs(self, sample: Feeds) -> None:
        from worker.engine.inspection import _count_flops

        if not self.hooks_supported:
            self.notes.append("per-layer MACs are not available for TorchScript")
            return
        try:
            _, per_module = _count_flops(self.module, self.tensors(sample))
        except Exception as exc:  # the model's own code or the flop counter failed: MACs are optional
            self.notes.append(f"MACs not counted: {exc}")
            return
        root = type(self.module).__name__
        for layer in self._layers:
            flops = per_module.get(f"{root}.{layer.name}")
            if flops is None and layer.type == "Embedding":
                flops = 0  # a table look-up: no multiply-accumulate
            layer.macs = None if flops is None else flops // 2
            if flops is None:
                layer.notes.append("MACs unknown: the flop counter saw none (e.g. a fused attention kernel)")

    def collect_stats(
        self, layers: Sequence[str], feeds: Feeds, batch_size: int, histogram: bool
    ) -> dict[tuple[str, str], ops.ActivationStats]:
        self._require_hooks("activation calibration")
        stats: dict[tuple[str, str], ops.ActivationStats] = {}
        for name in layers:
            for key in self.output_keys(name):
                stats[(name, key)] = ops.ActivationStats()
        passes: list[Callable[[ops.ActivationStats, np.ndarray], None]] = [ops.ActivationStats.update_range]
        if histogram:
            passes.append(ops.ActivationStats.update_histogram)
        for update in passes:
            handles = []
            for name in layers:

                def hook(_m: Any, _a: Any, output: Any, name: str = name, update: Any = update) -> None:
                    flat = _pytree.tree_leaves(output)
                    for key in self.output_keys(name):
                        update(stats[(name, key)], flat[int(key)].detach().to(torch.float32).numpy())

                handles.append(self._modules[name].register_forward_hook(hook))
            try:
                for batch in batches(feeds, batch_size):
                    self.runner.run(batch)
            finally:
                for handle in handles:
                    handle.remove()
        return stats

    def _require_hooks(self, what: str) -> None:
        if not self.hooks_supported:
            raise EngineError(
                f"{what} needs Python hooks on the model's layers, which TorchScript does not run; "
                "export the model with torch.export (.pt2) or ONNX for activation configs"
            )

    def write(self, tensors: Mapping[str, torch.Tensor]) -> None:
        """Write tensor values into the working copy (no restore: `session` is the reversible way)."""
        with torch.no_grad():
            for key, value in tensors.items():
                self._params[key].copy_(value.to(self._params[key].dtype))

    def attach(self, chains: Chains) -> list[Any]:
        """Register the output transforms as forward hooks; returns the hook handles."""
        if chains:
            self._require_hooks("compressing activations")
        handles = []
        for name, per_key in chains.items():

            def hook(_m: Any, _a: Any, output: Any, per_key: Mapping[str, Any] = per_key) -> Any:
                flat, spec = _pytree.tree_flatten(output)
                for key, chain in per_key.items():
                    flat[int(key)] = apply_chain(flat[int(key)], chain)
                return _pytree.tree_unflatten(flat, spec)

            handles.append(self._modules[name].register_forward_hook(hook))
        return handles

    @contextmanager
    def session(self, tensors: Mapping[str, torch.Tensor], chains: Chains) -> Iterator[Runner]:
        if chains:
            self._require_hooks("compressing activations")
        saved = {key: self._params[key].detach().clone() for key in tensors}
        handles: list[Any] = []
        try:
            self.write(tensors)
            handles = self.attach(chains)
            yield self.runner
        finally:
            for handle in handles:
                handle.remove()
            self.write(saved)

    def weights_digest(self) -> str:
        return digest_arrays(
            [self._params[k].detach().to(torch.float32).numpy() for k in sorted(self._params)]
        )

    def submodule(self, layer: str) -> Any:
        self.layer(layer)
        return self._modules[layer]


def _forward_arg_names(module: nn.Module) -> list[str]:
    params = inspect.signature(module.forward).parameters.values()
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not names:
        raise EngineError(f"{type(module).__name__}.forward takes no positional tensor inputs")
    return names
