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
model with attention gets a note saying so and what to do (save it with torch.export). Attention there is an
attention op (scaled_dot_product_attention, _native_multi_head_attention, _transformer_encoder_layer_fwd...)
or a softmax whose output type is a complete 4-D tensor type: not any softmax, since a classifier ending in
one is no transformer. Measured on torch 2.13: a traced graph saved and loaded again types every value as
plain `Tensor` (no rank), so a hand-written softmax attention in TorchScript gets no note, and the traced
tiny encoder of the tests gets it from its scaled_dot_product_attention.

Each model is read once per job (`ProgramSide`, `ScriptSide`): from the runner the fidelity job already
loaded when there is one, and the cheap check, the notes and the capture all use that one program.
"""

from __future__ import annotations

import functools
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.attention.folding import ATTENTION_RANK
from worker.engine.errors import EngineError
from worker.engine.layer_profile.sides import bind_feeds
from worker.engine.loaders import TorchRunner, load_model, torch_export_specs
from worker.engine.loaders.feeds import check_feeds

if TYPE_CHECKING:
    import torch
    import torch.fx

    from worker.engine.types import TensorSpec

SOFTMAX_TARGETS = frozenset({"aten.softmax.int", "aten._softmax.default", "aten._safe_softmax.default"})
MULTIHEAD_TYPE = "MultiheadAttention"
FUSED_WORDS = ("attention", "transformer_encoder_layer")
"""Words of the op names that compute attention in one kernel (aten.scaled_dot_product_attention,
_native_multi_head_attention, _transformer_encoder_layer_fwd, TorchScript's aten:: forms of the same)."""
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
            and any(word in str(node.target) for word in FUSED_WORDS)
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


def _fused_program_note(role: str, fused: Mapping[str, int]) -> str:
    ops = ", ".join(f"{op} x{count}" for op, count in fused.items())
    return (
        f"the {role} program computes attention in fused ops ({ops}) that torch does not decompose into a "
        "softmax, so the attention probabilities cannot be read. Export it with an attention written as "
        "softmax(q @ k^T) @ v or F.scaled_dot_product_attention (decomposed here) to compare attention maps."
    )


class ProgramSide:
    """A torch.export program read once: its attention softmaxes (after `expose_sdpa`), its fused attention
    ops and the capture, all from the same program."""

    def __init__(self, role: str, program: torch.export.ExportedProgram) -> None:
        self.role = role
        self.inputs = torch_export_specs(program)[0]
        self.program = expose_sdpa(program)
        self.softmaxes = len(attention_softmax_nodes(self.program.graph))
        self.fused = fused_torch_ops(self.program.graph)

    @classmethod
    def load(cls, role: str, path: Path, threads: int | None) -> ProgramSide:
        runner = load_model(path, "torch_export", intra_op_threads=threads)
        assert isinstance(runner, TorchRunner) and runner.program is not None
        return cls(role, runner.program)

    def note(self) -> str | None:
        """Why a program whose attention is fused into ops the decomposition leaves whole gets no maps."""
        return _fused_program_note(self.role, self.fused) if self.fused and not self.softmaxes else None

    def capture(self, workdir: Path, threads: int | None) -> TorchCapture:
        """workdir is the ONNX side's; torch's threads were set (process-wide) when the program was loaded."""
        return TorchCapture(self.program, self.inputs, self.role)


def torchscript_attention(module: Any) -> bool:
    """Whether a TorchScript module has attention: an attention op, or a softmax whose output is typed as a
    complete 4-D tensor (a classifier's final softmax is not attention)."""
    import torch

    graph = getattr(module, "inlined_graph", None)
    if graph is None:
        return False
    for node in graph.nodes():
        kind = node.kind()
        if any(word in kind for word in FUSED_WORDS):
            return True
        if "softmax" in kind:
            value = node.output().type()
            if isinstance(value, torch.TensorType) and value.dim() == ATTENTION_RANK:
                return True
    return False


class ScriptSide:
    """A TorchScript model: never captured (see the module's docstring); `attention` says whether it gets
    the TorchScript note."""

    softmaxes = 0

    def __init__(self, role: str, module: Any) -> None:
        self.role, self.attention = role, torchscript_attention(module)

    @classmethod
    def load(cls, role: str, path: Path, threads: int | None) -> ScriptSide:
        runner = load_model(path, "torchscript", intra_op_threads=threads)
        assert isinstance(runner, TorchRunner)
        return cls(role, runner.module)

    def note(self) -> str | None:
        return None  # the TorchScript note is one for the pair (pairs.py), not one per model


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

    def __init__(self, program: torch.export.ExportedProgram, inputs: list[TensorSpec], role: str) -> None:
        """program: already through `expose_sdpa`; its unlifted module is a copy of its graph (the program
        itself is left as it is) sharing its weights."""
        self.role, self.inputs = role, inputs
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.module = program.module()
        found = attention_softmax_nodes(self.module.graph)
        self.nodes = [attention for _, attention in found]
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
