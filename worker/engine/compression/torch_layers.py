"""Which torch modules Kneeboard compresses, and the LayerSpec of each: the weights, biases and channel
groups of a convolution, linear, embedding, recurrent (LSTM / GRU / RNN, per layer and direction) or
multi-head attention module, by parameter name."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from worker.engine.compression.layers import BiasSpec, ChannelGroup, LayerSpec, WeightSpec

_CONV = {"Conv1d", "Conv2d", "Conv3d"}
_LINEAR = {"Linear", "NonDynamicallyQuantizableLinear", "LazyLinear"}
_RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_RNN_WEIGHT = re.compile(r"^weight_(ih|hh)_l(\d+)(_reverse)?$")


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


def layer_spec(
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
