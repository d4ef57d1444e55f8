"""The float value of a layer's weight, however the model stores it.

A weight reaches its layer as an initializer, possibly through a dequantizing chain: onnxruntime's QDQ
(int8 initializer -> DequantizeLinear), a third party's in-graph dequantization (int8 initializer -> Cast
-> Mul by a float scale, as in the int8 MiniLM of tests/support/pretrained_minilm.py), or a Transpose / Reshape /
Identity an exporter put in between. `ConstFolder` evaluates such chains with numpy (only these few ops,
only when every input is constant), so that golden and compressed weights compare as float arrays."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

_FOLDABLE = frozenset(
    {"DequantizeLinear", "Cast", "Mul", "Transpose", "Reshape", "Identity", "Squeeze", "Unsqueeze"}
)


class ConstFolder:
    """Constant values of a graph's initializers and of the foldable nodes computed from them only."""

    def __init__(self, graph: onnx.GraphProto, folder: Path | None = None) -> None:
        self._graph = graph
        self._folder = folder
        self._inits = {init.name: init for init in graph.initializer}
        self._producers = {out: node for node in graph.node for out in node.output if out}
        self._cache: dict[str, np.ndarray | None] = {}

    def is_constant(self, name: str, depth: int = 0) -> bool:
        """Whether `name` is an initializer or a foldable node's output over constants (no values read)."""
        if name in self._inits:
            return True
        node = self._producers.get(name)
        if node is None or node.op_type not in _FOLDABLE or depth > 8:
            return False
        return all(self.is_constant(i, depth + 1) for i in node.input if i)

    def value(self, name: str) -> np.ndarray | None:
        """The float value of `name`, None when it is not constant or not foldable here."""
        if name not in self._cache:
            self._cache[name] = self._compute(name, 0)
        return self._cache[name]

    def _compute(self, name: str, depth: int) -> np.ndarray | None:
        from onnx import numpy_helper

        if name in self._inits:
            try:
                return np.asarray(numpy_helper.to_array(self._inits[name], base_dir=str(self._folder or "")))
            except Exception:  # external data missing: the weight is then unknown, not an error
                return None
        node = self._producers.get(name)
        if node is None or node.op_type not in _FOLDABLE or depth > 8:
            return None
        args = [self.value(i) if i else None for i in node.input]
        if any(a is None for a, i in zip(args, node.input, strict=True) if i):
            return None
        return _evaluate(node, args)


def _attr(node: onnx.NodeProto, name: str, default: int | list[int] | None) -> int | list[int] | None:
    for attr in node.attribute:
        if attr.name == name:
            return list(attr.ints) if attr.ints else int(attr.i)
    return default


def _evaluate(node: onnx.NodeProto, args: list[np.ndarray | None]) -> np.ndarray | None:
    x = args[0]
    if x is None:
        return None
    op = node.op_type
    if op in ("Cast", "Identity"):
        return x.astype(np.float32) if x.dtype.kind in "iuf" else None
    if op == "Mul" and args[1] is not None:
        return np.asarray(x, dtype=np.float32) * np.asarray(args[1], dtype=np.float32)
    if op == "DequantizeLinear" and len(args) > 1 and args[1] is not None:
        scale = np.asarray(args[1], dtype=np.float32)
        zero = np.asarray(args[2], dtype=np.float32) if len(args) > 2 and args[2] is not None else 0.0
        axis = _attr(node, "axis", 1)
        if scale.ndim == 1 and x.ndim > 1 and isinstance(axis, int):  # per-channel along `axis`
            shape = [1] * x.ndim
            shape[axis] = -1
            scale = scale.reshape(shape)
            zero = np.asarray(zero).reshape(shape) if np.ndim(zero) == 1 else zero
        return (x.astype(np.float32) - zero) * scale
    if op == "Transpose":
        perm = _attr(node, "perm", None)
        return np.transpose(x, perm if isinstance(perm, list) else None)
    if op == "Reshape" and args[1] is not None:
        return x.reshape([int(d) for d in args[1]]) if 0 not in args[1] else None
    if op in ("Squeeze", "Unsqueeze"):
        axes = args[1] if len(args) > 1 and args[1] is not None else _attr(node, "axes", None)
        if axes is None:
            return np.squeeze(x) if op == "Squeeze" else None
        axes_list = [int(a) for a in np.atleast_1d(np.asarray(axes))]
        return np.squeeze(x, tuple(axes_list)) if op == "Squeeze" else np.expand_dims(x, tuple(axes_list))
    return None


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two same-shape arrays (0 when either is all zeros)."""
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    norm = float(np.linalg.norm(a64) * np.linalg.norm(b64))
    return float(a64 @ b64) / norm if norm > 0 else 0.0
