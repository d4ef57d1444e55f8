"""The torch side of the attention-map fidelity (issue 13, transformer internals): torch.export programs
(.pt2), and why TorchScript archives get a note instead.

An attention softmax of an exported program is an aten softmax (softmax.int, _softmax, _safe_softmax) over
the last axis whose output is 4-D [N, heads, Tq, Tk], or 3-D [N * heads, Tq, Tk] inside an
nn.MultiheadAttention (its need_weights=True path folds the heads into the batch, head-major within each
sample: reshaped back to [N, heads, Tq, Tk] with the batch's N). Fused scaled_dot_product_attention (what
nn.TransformerEncoderLayer, nn.MultiheadAttention with need_weights=False and F.scaled_dot_product_attention
export to) has no softmax node: the program is first run through `run_decompositions` with only torch's
scaled-dot-product decompositions, which write it as matmul, _safe_softmax, matmul and leave every other op as
exported (measured: the encoder test's other ops are unchanged). The maps are then read by a recording
submodule inserted after each softmax of the unlifted graph module (`program.module()`), so a batch costs one
ordinary forward pass; the maps are copied out and the references dropped after each batch.

TorchScript: its graph is TorchScript IR. Reading an intermediate value means rewriting that graph through
private torch._C passes (freeze, inline, register extra outputs, rebuild a function from the graph), which
torch does not offer as an API and which change between releases, so the step does not do it; a TorchScript
model with softmax or attention ops gets a note saying so and what to do (save it with torch.export).
"""

from __future__ import annotations

import functools
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from worker.engine.attention.folding import ATTENTION_RANK, AttentionOutcome, compare_captures
from worker.engine.errors import EngineError
from worker.engine.layer_profile.sides import bind_feeds
from worker.engine.loaders import TorchRunner, load_model
from worker.engine.loaders.feeds import check_feeds

if TYPE_CHECKING:
    import torch
    import torch.fx

SOFTMAX_TARGETS = frozenset({"aten.softmax.int", "aten._softmax.default", "aten._safe_softmax.default"})
MULTIHEAD_TYPE = "MultiheadAttention"
TORCHSCRIPT_ATTENTION_KINDS = ("softmax", "attention", "transformer_encoder_layer")
TORCHSCRIPT_NOTE = (
    "the attention maps of TorchScript models are not compared: reading a softmax inside a TorchScript graph "
    "needs it rewritten through private torch._C passes (freeze, inline, extra outputs), which torch does not "
    "support as an API. Save both models with torch.export (.pt2) to get them."
)


@dataclass(frozen=True)
class TorchAttentionNode:
    node: str  # the fx node's name
    module: str  # the module path it runs in ('' for the root)
    folded_heads: bool  # a 3-D [N * heads, Tq, Tk] map of nn.MultiheadAttention

    @property
    def name(self) -> str:
        return f"{self.module}:{self.node}" if self.module else self.node


def _innermost_module(node: torch.fx.Node) -> tuple[str, str]:
    """(module path, class name) of the innermost module a node runs in, from nn_module_stack."""
    stack = list((node.meta.get("nn_module_stack") or {}).values())
    if not stack:
        return "", ""
    path, type_name = stack[-1]
    return str(path), str(type_name).rsplit(".", 1)[-1]


def attention_softmax_nodes(graph: torch.fx.Graph) -> list[tuple[torch.fx.Node, TorchAttentionNode]]:
    """The graph's attention softmaxes in graph (execution) order."""
    found = []
    for node in graph.nodes:
        if node.op != "call_function" or str(node.target) not in SOFTMAX_TARGETS:
            continue
        value = node.meta.get("val")
        rank = len(value.shape) if value is not None and hasattr(value, "shape") else None
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        if rank is None or not isinstance(dim, int) or dim not in (-1, rank - 1):
            continue
        path, type_name = _innermost_module(node)
        folded = rank == ATTENTION_RANK - 1 and type_name == MULTIHEAD_TYPE
        if rank == ATTENTION_RANK or folded:
            found.append((node, TorchAttentionNode(node.name, path, folded)))
    return found


def fused_torch_ops(graph: torch.fx.Graph) -> dict[str, int]:
    """Ops that compute attention inside one kernel and have no softmax node, {target: count}."""
    return dict(
        Counter(
            str(node.target)
            for node in graph.nodes
            if node.op == "call_function"
            and str(node.target) not in SOFTMAX_TARGETS
            and any(word in str(node.target) for word in ("attention", "transformer_encoder_layer"))
        )
    )


def expose_sdpa(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """The program with scaled_dot_product_attention written out as math (its softmax a node); the
    program itself when it has none."""
    import torch

    if not any("scaled_dot_product" in str(node.target) for node in program.graph.nodes):
        return program
    table = {
        op: fn for op, fn in torch.export.default_decompositions().items() if "scaled_dot_product" in str(op)
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return program.run_decompositions(table)


def _load_program(path: Path, threads: int | None) -> TorchRunner:
    runner = load_model(path, "torch_export", intra_op_threads=threads)
    assert isinstance(runner, TorchRunner) and runner.program is not None
    return runner


def has_torch_attention(path: Path) -> bool:
    """The cheap check: whether the exported program has an attention softmax or a scaled-dot-product
    attention op (found after the decomposition)."""
    program = _load_program(path, None).program
    assert program is not None
    graph = program.graph
    return bool(attention_softmax_nodes(graph)) or any(
        "scaled_dot_product" in str(n.target) for n in graph.nodes
    )


def torch_fused_note(role: str, path: Path) -> str | None:
    """Why a program whose attention is fused into ops the decomposition leaves whole gets no maps."""
    program = _load_program(path, None).program
    assert program is not None
    graph = expose_sdpa(program).graph
    if attention_softmax_nodes(graph):
        return None
    fused = fused_torch_ops(graph)
    if not fused:
        return None
    ops = ", ".join(f"{op} x{count}" for op, count in fused.items())
    return (
        f"the {role} program computes attention in fused ops ({ops}) that torch does not decompose into a "
        "softmax, so the attention probabilities cannot be read. Export it with an attention written as "
        "softmax(q @ k^T) @ v or F.scaled_dot_product_attention (decomposed here) to compare attention maps."
    )


def torchscript_note(path: Path) -> str | None:
    """TORCHSCRIPT_NOTE when the TorchScript model has softmax or attention ops, else None."""
    runner = load_model(path, "torchscript")
    assert isinstance(runner, TorchRunner)
    graph = getattr(runner.module, "inlined_graph", None)
    if graph is None:
        return None
    kinds = [node.kind() for node in graph.nodes()]
    return TORCHSCRIPT_NOTE if any(word in k for k in kinds for word in TORCHSCRIPT_ATTENTION_KINDS) else None


@functools.cache
def _recorder_class() -> type[torch.nn.Module]:
    """A submodule inserted after a softmax: keeps a reference to its output for the batch (defined on first
    use: torch is imported only where it is needed)."""
    import torch

    class Recorder(torch.nn.Module):
        def __init__(self, store: list[torch.Tensor | None], index: int) -> None:
            super().__init__()
            self.store, self.index = store, index

        def forward(self, value: torch.Tensor) -> torch.Tensor:
            self.store[self.index] = value
            return value

    return Recorder


class TorchCapture:
    """An exported program whose unlifted graph module records its attention softmaxes."""

    def __init__(self, path: Path, role: str, threads: int | None) -> None:

        runner = _load_program(path, threads)
        assert runner.program is not None
        self.role, self.inputs = role, runner.inputs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.module = expose_sdpa(runner.program).module()
        found = attention_softmax_nodes(self.module.graph)
        self.nodes = [attention for _, attention in found]
        self.fused = fused_torch_ops(self.module.graph)
        self._store: list[torch.Tensor | None] = [None] * len(found)
        for index, (node, _) in enumerate(found):
            target = f"_kb_attention_{index}"
            self.module.add_submodule(target, _recorder_class()(self._store, index))
            with self.module.graph.inserting_after(node):
                self.module.graph.call_module(target, (node,))
        self.module.recompile()

    @property
    def names(self) -> list[str]:
        return [node.name for node in self.nodes]

    @property
    def fixed_batch(self) -> int | None:
        dims = [spec.shape[0] for spec in self.inputs if spec.shape]
        fixed = {dim for dim in dims if isinstance(dim, int) and dim > 0}
        return min(fixed) if fixed else None

    def run(self, batch: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        import torch

        bound = bind_feeds(batch, [spec.name for spec in self.inputs], self.role)
        arrays = check_feeds(bound, self.inputs)
        size = len(arrays[0]) if arrays and arrays[0].ndim else 1
        self._store[:] = [None] * len(self._store)
        try:
            with torch.inference_mode():
                self.module(*(torch.from_numpy(np.require(a, requirements=["C", "W"])) for a in arrays))
        except Exception as exc:  # whatever the model's own code raises
            raise EngineError(f"torch failed to run the {self.role} model: {exc}") from exc
        maps = []
        for node, value in zip(self.nodes, self._store, strict=True):
            if value is None:
                raise EngineError(f"the {self.role} model's softmax {node.name!r} did not run")
            array = value.detach().float().numpy().copy()
            if node.folded_heads and array.shape[0] % size == 0:
                array = array.reshape(size, array.shape[0] // size, *array.shape[1:])
            maps.append(array)
        self._store[:] = [None] * len(self._store)
        return maps


def torch_attention_fidelity(
    golden_path: Path,
    compressed_path: Path,
    arrays: Mapping[str, np.ndarray],
    *,
    memory_budget_mb: float = 256.0,
    intra_op_threads: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> AttentionOutcome:
    """Per layer x head mean KL and JS between the attention maps of two torch.export programs."""
    golden = TorchCapture(golden_path, "golden", intra_op_threads)
    compressed = TorchCapture(compressed_path, "compressed", intra_op_threads)
    return compare_captures(
        golden, compressed, arrays, memory_budget_mb=memory_budget_mb, on_progress=on_progress
    )
