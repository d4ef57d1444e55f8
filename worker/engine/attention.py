"""Attention-map fidelity of an ONNX pair (issue 13, transformer internals): how far the compressed model's
attention distributions move from the golden model's, per layer and head.

An attention softmax is a Softmax over the last axis whose output is 4-D, [N, heads, Tq, Tk]. The k-th such
node of the golden graph is paired with the k-th of the compressed graph (graph order); when the counts or
the shapes differ there is no pairing to trust, and the result is a note instead of a document.

Both models are run on augmented copies that also output those softmaxes (as the layer profile does,
worker/engine/layer_profile/onnx_side.py: graph optimizations off, so a QDQ model runs as simulated
quantization), batch by batch; each batch is folded into per layer x head sums and dropped, so memory is one
batch's maps, sized from `memory_budget_mb`. Per head: the mean over samples x query positions of
KL(golden ‖ compressed) = Σ_k p log(p / q) and of the Jensen–Shannon divergence (nats; the rows normalised
to sum 1 first, as scipy.spatial.distance.jensenshannon does), leaving out padded query positions when the
dataset has an attention-mask input (value 0).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.errors import ModelLoadError
from worker.engine.layer_profile.onnx_side import ort_session
from worker.engine.layer_profile.sides import bind_feeds

if TYPE_CHECKING:
    import onnx
    import onnxruntime

ATTENTION_RANK = 4
BYTES_PER_VALUE = 4 + 4 + 6 * 8
"""Per attention value of one layer in a batch: the float32 maps of both models, and ~6 float64 arrays of the
same size alive while one layer is folded (p, q, ratios, logs, the JS mixture)."""


@dataclass(frozen=True)
class AttentionNode:
    node: str
    output: str


@dataclass
class AttentionOutcome:
    """document: {layers, heads, n_samples, n_queries, mask_input, notes}; None when the graphs cannot be
    paired, and `note` says why."""

    document: dict[str, Any] | None
    note: str | None = None


def _load(path: Path) -> onnx.ModelProto:
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf decode errors and OSError share no useful base class
        raise ModelLoadError(f"onnx could not load {path.name}: {exc}") from exc


def attention_softmaxes(model: onnx.ModelProto) -> list[AttentionNode]:
    """The main graph's Softmax nodes over the last axis whose output is (or may be: rank unknown after
    shape inference) 4-D, in graph order."""
    import onnx

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
        ranks = {
            vi.name: len(vi.type.tensor_type.shape.dim)
            for vi in (*inferred.value_info, *inferred.output)
            if vi.type.tensor_type.HasField("shape")
        }
    except Exception:  # inference is only a filter: the runtime shapes are checked on the first batch
        ranks = {}
    found = []
    for i, node in enumerate(model.graph.node):
        if node.op_type != "Softmax" or node.domain not in ("", "ai.onnx") or not node.output:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), -1 if opset >= 13 else 1)
        rank = ranks.get(node.output[0])
        if rank is not None and rank != ATTENTION_RANK:
            continue
        if axis == -1 or axis == ATTENTION_RANK - 1:
            found.append(AttentionNode(node.name or f"Softmax#{i}", node.output[0]))
    return found


def has_attention(path: Path) -> bool:
    """The cheap check: whether the graph has at least one attention softmax."""
    return bool(attention_softmaxes(_load(path)))


def kl_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Σ over the last axis of p log(p / q) (0 where p = 0, inf where q = 0 < p)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p / q), 0.0)
    return np.asarray(terms.sum(axis=-1))


def js_rows(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen–Shannon divergence (nats) over the last axis, each row normalised to sum 1 first."""
    p = p / p.sum(axis=-1, keepdims=True)
    q = q / q.sum(axis=-1, keepdims=True)
    m = (p + q) / 2
    return np.asarray((kl_rows(p, m) + kl_rows(q, m)) / 2)


def mask_input(arrays: Mapping[str, np.ndarray]) -> str | None:
    """The dataset's attention mask: an integer or boolean [N, T] array whose name contains 'mask'."""
    for name, array in arrays.items():
        if "mask" in name.lower() and array.ndim == 2 and array.dtype.kind in "biu":
            return name
    return None


class _Capture:
    """One model's augmented copy: its outputs are the attention softmaxes only."""

    def __init__(self, path: Path, model: onnx.ModelProto, nodes: list[AttentionNode], workdir: Path,
                 role: str, threads: int | None) -> None:  # fmt: skip
        import onnx

        augmented = onnx.ModelProto()
        augmented.CopyFrom(model)
        existing = {vi.name for vi in augmented.graph.output}
        augmented.graph.output.extend(
            onnx.ValueInfoProto(name=n.output) for n in nodes if n.output not in existing
        )
        target = workdir / f"{role}_attention.onnx"
        onnx.save(augmented, str(target))
        initializers = {init.name for init in model.graph.initializer}
        self.inputs = [vi.name for vi in model.graph.input if vi.name not in initializers]
        self.outputs = [n.output for n in nodes]
        self.role = role
        try:
            self.session: onnxruntime.InferenceSession = ort_session(target, path.parent, threads)
        except Exception as exc:  # onnxruntime's pybind exceptions share no public base class
            raise ModelLoadError(f"onnxruntime could not load the {role} model: {exc}") from exc
        dims = [arg.shape[0] if arg.shape else None for arg in self.session.get_inputs()]
        fixed = {dim for dim in dims if isinstance(dim, int) and dim > 0}
        self.fixed_batch = min(fixed) if fixed else None

    def run(self, batch: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        feeds = bind_feeds(batch, self.inputs, self.role)
        return [np.asarray(a) for a in self.session.run(self.outputs, feeds)]


@dataclass
class _Sums:
    kl: np.ndarray  # [layers, heads]
    js: np.ndarray
    queries: int = 0
    infinite: np.ndarray = field(default_factory=lambda: np.zeros(0))


def _fold(sums: _Sums, golden: list[np.ndarray], compressed: list[np.ndarray], keep: np.ndarray) -> None:
    """Add one batch: keep is [b, Tq] (True = a real query position)."""
    weights = keep.astype(np.float64)[:, None, :]  # [b, 1, Tq]
    for layer, (g, c) in enumerate(zip(golden, compressed, strict=True)):
        p, q = g.astype(np.float64), c.astype(np.float64)
        kl = kl_rows(p, q)  # [b, heads, Tq]
        finite = np.isfinite(kl)
        sums.infinite[layer] += ((~finite) & (weights > 0)).sum(axis=(0, 2))
        sums.kl[layer] += np.where(weights > 0, kl, 0.0).sum(axis=(0, 2))
        sums.js[layer] += (js_rows(p, q) * weights).sum(axis=(0, 2))
    sums.queries += int(keep.sum())


def _shape_note(golden: list[np.ndarray], compressed: list[np.ndarray], nodes: list[AttentionNode],
                cnodes: list[AttentionNode]) -> str | None:  # fmt: skip
    for g, c, gn, cn in zip(golden, compressed, nodes, cnodes, strict=True):
        if g.ndim != ATTENTION_RANK or g.shape != c.shape:
            return (
                f"the attention softmaxes cannot be paired: golden {gn.node!r} gives {list(g.shape)} and "
                f"compressed {cn.node!r} gives {list(c.shape)} (both must be [N, heads, Tq, Tk])"
            )
    return None


def attention_fidelity(
    golden_path: Path,
    compressed_path: Path,
    arrays: Mapping[str, np.ndarray],
    *,
    memory_budget_mb: float = 256.0,
    intra_op_threads: int | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> AttentionOutcome:
    """Per layer x head mean KL and JS between the golden and compressed attention maps over `arrays`."""
    golden_model, compressed_model = _load(golden_path), _load(compressed_path)
    nodes, cnodes = attention_softmaxes(golden_model), attention_softmaxes(compressed_model)
    if not nodes or len(nodes) != len(cnodes):
        return AttentionOutcome(
            None,
            f"the attention softmaxes cannot be paired: the golden graph has {len(nodes)} and the compressed "
            f"graph {len(cnodes)}",
        )
    n = len(next(iter(arrays.values()))) if arrays else 0
    mask_name = mask_input(arrays)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kb-attention-") as tmp:
        golden = _Capture(golden_path, golden_model, nodes, Path(tmp), "golden", intra_op_threads)
        compressed = _Capture(compressed_path, compressed_model, cnodes, Path(tmp), "compressed",
                              intra_op_threads)  # fmt: skip
        del golden_model, compressed_model
        fixed = golden.fixed_batch or compressed.fixed_batch
        batch, start, sums = fixed or 1, 0, None
        end_all = n - n % fixed if fixed else n
        if fixed and end_all < n:
            notes.append(f"the models take batches of {fixed}: the last {n - end_all} samples are left out")
        while start < end_all:
            stop = min(start + batch, end_all)
            chunk = {name: np.asarray(a[start:stop]) for name, a in arrays.items()}
            g, c = golden.run(chunk), compressed.run(chunk)
            if sums is None:  # the first batch: check the pairing, size the next batches from its maps
                note = _shape_note(g, c, nodes, cnodes)
                if note is not None:
                    return AttentionOutcome(None, note)
                heads = g[0].shape[1]
                if any(a.shape[1] != heads for a in g):
                    return AttentionOutcome(None, "the attention layers have different head counts")
                sums = _Sums(np.zeros((len(g), heads)), np.zeros((len(g), heads)),
                             infinite=np.zeros((len(g), heads)))  # fmt: skip
                per_sample = max(sum(a[0].size for a in g), 1) * BYTES_PER_VALUE
                if not fixed:
                    batch = max(1, int(memory_budget_mb * 2**20 // per_sample))
            elif _shape_note(g, c, nodes, cnodes) is not None:
                return AttentionOutcome(None, _shape_note(g, c, nodes, cnodes))
            tq = g[0].shape[2]
            keep = np.ones((stop - start, tq), dtype=bool)
            if mask_name is not None:
                mask = np.asarray(arrays[mask_name][start:stop])
                if mask.shape[1] == tq:
                    keep = mask != 0
                elif start == 0:
                    notes.append(f"{mask_name!r} has {mask.shape[1]} positions, the attention {tq}: not used")
                    mask_name = None
            _fold(sums, g, c, keep)
            del g, c
            start = stop
            if on_progress is not None:
                on_progress(start, end_all)
    if sums is None or sums.queries == 0:
        return AttentionOutcome(None, "no query positions to compare (an empty dataset, or all masked)")
    infinite = int(sums.infinite.sum())
    if infinite:
        notes.append(
            f"{infinite} query rows give an infinite KL: the compressed model puts probability 0 where the "
            "golden one does not (the heads' KL is then infinite; JS stays finite)"
        )
    return AttentionOutcome(
        {
            "layers": [
                {
                    "golden_node": gn.node,
                    "compressed_node": cn.node,
                    "kl": (sums.kl[i] / sums.queries).tolist(),
                    "js": (sums.js[i] / sums.queries).tolist(),
                    "kl_infinite": (sums.infinite[i] > 0).tolist(),
                }
                for i, (gn, cn) in enumerate(zip(nodes, cnodes, strict=True))
            ],
            "heads": int(sums.kl.shape[1]),
            "n_samples": end_all,
            "n_queries": sums.queries,
            "mask_input": mask_name,
            "notes": notes,
        }
    )
