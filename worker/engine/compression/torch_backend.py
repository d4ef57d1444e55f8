"""Compression of torch models: a python nn.Module, a torch.export program, or a TorchScript module.

Weights are changed in place on a private deep copy (the caller's module is never touched) and
restored bit for bit after each evaluation. Output transforms (activation fake-quant, fp16/bf16 casts)
are forward hooks on the layer's module. torch.export programs are run as
`torch.export.unflatten(program)`, whose submodules are called one by one so that hooks fire (the flat
`program.module()` inlines every layer). TorchScript modules run their submodules inside the TorchScript
interpreter, where Python hooks never fire: they support weight-only configs.
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
from worker.engine.compression.layers import (
    BiasSpec,
    ChannelGroup,
    LayerSpec,
    WeightSpec,
    apply_chain,
    finish_layers,
)
from worker.engine.compression.model import Chains, CompressibleModel, Feeds, batches, digest_arrays
from worker.engine.errors import EngineError
from worker.engine.loaders import TorchRunner
from worker.engine.types import Runner, TensorSpec

_CONV = {"Conv1d", "Conv2d", "Conv3d"}
_LINEAR = {"Linear", "NonDynamicallyQuantizableLinear", "LazyLinear"}
_RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_RNN_WEIGHT = re.compile(r"^weight_(ih|hh)_l(\d+)(_reverse)?$")
_CALL_SUFFIX = re.compile(r"@\d+$")


def layer_kind(type_name: str, module: Any = None) -> str | None:
    """ "conv" | "linear" | "embedding" | "rnn" | "mha" for the module types Kneeboard compresses."""
    if isinstance(module, nn.Module) and not isinstance(module, torch.jit.ScriptModule):
        if isinstance(module, nn.Conv1d | nn.Conv2d | nn.Conv3d):
            return "conv"
        if isinstance(module, nn.Linear):
            return "linear"
        if isinstance(module, nn.Embedding):
            return "embedding"
        if isinstance(module, nn.LSTM | nn.GRU | nn.RNN):
            return "rnn"
        if isinstance(module, nn.MultiheadAttention):
            return "mha"
    if type_name in _CONV:
        return "conv"
    if type_name in _LINEAR:
        return "linear"
    if type_name == "Embedding":
        return "embedding"
    if type_name in _RNN_GATES:
        return "rnn"
    if type_name == "MultiheadAttention":
        return "mha"
    return None


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
            spec = _layer_spec(name, type_name, kind, sub, lambda p: keys[id(p)])
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


def _layer_spec(
    name: str, type_name: str, kind: str, module: Any, key_of: Callable[[Any], str]
) -> LayerSpec | None:
    own = dict(module.named_parameters(recurse=False))

    def weight(param_name: str, **kwargs: Any) -> WeightSpec:
        p = own[param_name]
        return WeightSpec(key_of(p), f"{name}.{param_name}", tuple(p.shape), **kwargs)

    def bias(param_name: str, gates: int = 1) -> BiasSpec | None:
        p = own.get(param_name)
        return None if p is None else BiasSpec(key_of(p), f"{name}.{param_name}", tuple(p.shape), gates)

    weights: list[WeightSpec] = []
    biases: list[BiasSpec] = []
    groups: list[ChannelGroup] = []

    def add(w: WeightSpec | None, *bs: BiasSpec | None) -> None:
        if w is not None:
            weights.append(w)
        biases.extend(b for b in bs if b is not None)

    if kind in ("conv", "linear"):
        if "weight" not in own:
            return None
        b = bias("bias")
        add(weight("weight"), b)
        groups.append(ChannelGroup((weights[0].key,), (b.key,) if b else ()))
    elif kind == "embedding":
        if "weight" not in own:
            return None
        add(weight("weight", quant_axis=0, prune_axis=1))
        groups.append(ChannelGroup((weights[0].key,)))
    elif kind == "rnn":
        gates = _RNN_GATES.get(
            type_name, 4 if isinstance(module, nn.LSTM) else 3 if isinstance(module, nn.GRU) else 1
        )
        suffixes = sorted(
            {m.group(2) + (m.group(3) or "") for p in own if (m := _RNN_WEIGHT.match(p))},
            key=lambda s: (int(s.split("_")[0]), s),
        )
        for suffix in suffixes:
            ih, hh = weight(f"weight_ih_l{suffix}", gates=gates), weight(f"weight_hh_l{suffix}", gates=gates)
            bih, bhh = bias(f"bias_ih_l{suffix}", gates), bias(f"bias_hh_l{suffix}", gates)
            add(ih, bih)
            add(hh, bhh)
            groups.append(ChannelGroup((ih.key, hh.key), tuple(b.key for b in (bih, bhh) if b)))
            if f"weight_hr_l{suffix}" in own:
                hr = weight(f"weight_hr_l{suffix}")
                add(hr)
                groups.append(ChannelGroup((hr.key,)))
        # the output channels of the layer are those of the last layer's forward direction
        forward = [g for g in groups if not any(k.endswith("_reverse") for k in g.weights)]
        if forward:
            groups.remove(forward[-1])
            groups.append(forward[-1])
    elif kind == "mha":
        for proj in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"):
            if own.get(proj) is not None:
                w = weight(proj)
                b = bias("in_proj_bias") if proj == "in_proj_weight" else None
                add(w, b)
                groups.append(ChannelGroup((w.key,), (b.key,) if b else ()))
        out_proj = getattr(module, "out_proj", None)
        if out_proj is not None and getattr(out_proj, "weight", None) is not None:
            ow = WeightSpec(key_of(out_proj.weight), f"{name}.out_proj.weight", tuple(out_proj.weight.shape))
            ob = None
            if getattr(out_proj, "bias", None) is not None:
                ob = BiasSpec(key_of(out_proj.bias), f"{name}.out_proj.bias", tuple(out_proj.bias.shape))
            add(ow, ob)
            groups.append(ChannelGroup((ow.key,), (ob.key,) if ob else ()))
    if not weights:
        return None
    return LayerSpec(
        name=name,
        type=type_name,
        weights=weights,
        biases=biases,
        channel_groups=groups,
        output_channel_axis=1 if kind == "conv" else -1,
    )
