"""The constants a removed channel carries through the ops of a channel space (see `export_pruned`):
each op evaluated on one value per removed channel, in float64, and the refusal raised when a constant
cannot be folded exactly."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from worker.engine.sweep.pruned_graph import POOLS, REDUCE, attr

if TYPE_CHECKING:
    import onnx


class Refused(Exception):
    """A group whose removal would not be exact; the message says why. `channels`: when only these of the
    removed channels are the problem (a non-zero constant that cannot be folded), the others can go."""

    def __init__(self, reason: str, channels: np.ndarray | None = None) -> None:
        super().__init__(reason)
        self.channels = channels


def operand_values(value: np.ndarray, axis: int, channels: int, index: np.ndarray, where: str) -> np.ndarray:
    """A constant operand's values at the channels `index` (a scalar broadcasts)."""
    if value.size == 1:
        return np.full(len(index), float(value.reshape(())), dtype=np.float64)
    pos = value.ndim + axis
    if pos < 0 or value.shape[pos] != channels or value.size != channels:
        raise Refused(
            f"{where} uses a constant of shape {list(value.shape)} that is not one value per channel"
        )
    return np.asarray(value.reshape(-1)[index], dtype=np.float64)


def padded(node: onnx.NodeProto) -> bool:
    return any(attr(node, "pads", [])) or attr(node, "auto_pad", b"NOTSET") not in (
        b"NOTSET",
        b"VALID",
        "NOTSET",
    )


def unary(node: onnx.NodeProto, x: np.ndarray, operands: list[np.ndarray]) -> np.ndarray:
    op = node.op_type
    if op in ("Identity", "Dropout", "Flatten", "Reshape", *POOLS, *REDUCE):
        return x  # AveragePool: one that pads and counts the padding is refused before (see _plan)
    if op == "Relu":
        return np.maximum(x, 0.0)
    if op == "LeakyRelu":
        return np.where(x >= 0, x, attr(node, "alpha", 0.01) * x)
    if op == "Sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op == "Tanh":
        return np.tanh(x)
    if op == "HardSigmoid":
        return np.clip(attr(node, "alpha", 0.2) * x + attr(node, "beta", 0.5), 0.0, 1.0)
    if op == "HardSwish":
        return x * np.clip(x / 6.0 + 0.5, 0.0, 1.0)
    if op == "Clip":
        low = operands[0] if len(operands) > 0 else attr(node, "min", -math.inf)
        high = operands[1] if len(operands) > 1 else attr(node, "max", math.inf)
        return np.clip(x, low, high)
    if op == "Neg":
        return -x
    if op == "Erf":
        return np.vectorize(math.erf)(x)
    if op == "Elu":
        return np.where(x > 0, x, attr(node, "alpha", 1.0) * np.expm1(x))
    if op == "Gelu":
        if attr(node, "approximate", b"none") in (b"tanh", "tanh"):
            return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    if op == "Softplus":
        return np.log1p(np.exp(x))
    raise Refused(f"{op} is not evaluated by the channel pruner")


def binary(op: str, values: list[np.ndarray]) -> np.ndarray:
    table: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
        "Add": np.add,
        "Sub": np.subtract,
        "Mul": np.multiply,
        "Div": np.divide,
        "Max": np.maximum,
        "Min": np.minimum,
        "Sum": np.add,
        "Mean": np.add,
    }
    out = values[0]
    for value in values[1:]:
        out = table[op](out, value)
    return out / len(values) if op == "Mean" else out


def show(x: np.ndarray) -> str:
    shown = ", ".join(f"{v:.3g}" for v in x[:3])
    return f"[{shown}{', …' if len(x) > 3 else ''}]"
