"""The format-free half of the attention-map fidelity (issue 13, transformer internals): the per layer x head
KL / JS folding and the batch loop, shared by the ONNX side (onnx_side.py) and the torch side
(torch_side.py) so both sum the same way.

A side is an `AttentionCapture`: its attention maps in graph order, one [N, heads, Tq, Tk] float array per
attention softmax for a batch of samples. The k-th map of the golden model is paired with the k-th of the
compressed model; when the counts or the shapes differ there is no pairing to trust, and the result is a
note instead of a document.

Both captures run batch by batch; each batch is folded into per layer x head sums and dropped, so memory is
one batch's maps, sized from `memory_budget_mb`. Per head: the mean over samples x query positions of
KL(golden ‖ compressed) = Σ_k p log(p / q) and of the Jensen–Shannon divergence (nats; the rows normalised
to sum 1 first, as scipy.spatial.distance.jensenshannon does), leaving out padded query positions when the
dataset has an attention-mask input (value 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

ATTENTION_RANK = 4
BYTES_PER_VALUE = 4 + 4 + 6 * 8
"""Per attention value of one layer in a batch: the float32 maps of both models, and ~6 float64 arrays of the
same size alive while one layer is folded (p, q, ratios, logs, the JS mixture)."""


@dataclass
class AttentionOutcome:
    """document: {layers, heads, n_samples, n_queries, mask_input, notes}; None when the graphs cannot be
    paired, and `note` says why."""

    document: dict[str, Any] | None
    note: str | None = None


class AttentionCapture(Protocol):
    """One model instrumented to return its attention maps."""

    @property
    def names(self) -> Sequence[str]:
        """One name per attention softmax, in graph order (the document's golden_node / compressed_node)."""
        ...

    @property
    def fixed_batch(self) -> int | None:
        """The batch size the model only accepts, or None when it takes any."""
        ...

    def run(self, batch: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The attention maps of one batch, one array per softmax in `names` order."""
        ...


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


def _shape_note(golden: list[np.ndarray], compressed: list[np.ndarray], names: Sequence[str],
                cnames: Sequence[str]) -> str | None:  # fmt: skip
    for g, c, gn, cn in zip(golden, compressed, names, cnames, strict=True):
        if g.ndim != ATTENTION_RANK or g.shape != c.shape:
            return (
                f"the attention softmaxes cannot be paired: golden {gn!r} gives {list(g.shape)} and "
                f"compressed {cn!r} gives {list(c.shape)} (both must be [N, heads, Tq, Tk])"
            )
    return None


def count_note(golden: int, compressed: int) -> str:
    return (
        f"the attention softmaxes cannot be paired: the golden graph has {golden} and the compressed "
        f"graph {compressed}"
    )


def compare_captures(
    golden: AttentionCapture,
    compressed: AttentionCapture,
    arrays: Mapping[str, np.ndarray],
    *,
    memory_budget_mb: float = 256.0,
    on_progress: Callable[[int, int], None] | None = None,
) -> AttentionOutcome:
    """Per layer x head mean KL and JS between two captures' attention maps over `arrays`: the first batch
    is one sample (or the models' fixed batch), its maps size the next batches from `memory_budget_mb`."""
    names, cnames = list(golden.names), list(compressed.names)
    if not names or len(names) != len(cnames):
        return AttentionOutcome(None, count_note(len(names), len(cnames)))
    n = len(next(iter(arrays.values()))) if arrays else 0
    mask_name = mask_input(arrays)
    notes: list[str] = []
    fixed = golden.fixed_batch or compressed.fixed_batch
    batch, start, sums = fixed or 1, 0, None
    end_all = n - n % fixed if fixed else n
    if fixed and end_all < n:
        notes.append(f"the models take batches of {fixed}: the last {n - end_all} samples are left out")
    while start < end_all:
        stop = min(start + batch, end_all)
        chunk = {name: np.asarray(a[start:stop]) for name, a in arrays.items()}
        g, c = golden.run(chunk), compressed.run(chunk)
        note = _shape_note(g, c, names, cnames)
        if note is not None:
            return AttentionOutcome(None, note)
        if sums is None:  # the first batch: check the head counts, size the next batches from its maps
            heads = g[0].shape[1]
            if any(a.shape[1] != heads for a in g):
                return AttentionOutcome(None, "the attention layers have different head counts")
            sums = _Sums(np.zeros((len(g), heads)), np.zeros((len(g), heads)),
                         infinite=np.zeros((len(g), heads)))  # fmt: skip
            per_sample = max(sum(a[0].size for a in g), 1) * BYTES_PER_VALUE
            if not fixed:
                batch = max(1, int(memory_budget_mb * 2**20 // per_sample))
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
                    "golden_node": gn,
                    "compressed_node": cn,
                    "kl": (sums.kl[i] / sums.queries).tolist(),
                    "js": (sums.js[i] / sums.queries).tolist(),
                    "kl_infinite": (sums.infinite[i] > 0).tolist(),
                }
                for i, (gn, cn) in enumerate(zip(names, cnames, strict=True))
            ],
            "heads": int(sums.kl.shape[1]),
            "n_samples": end_all,
            "n_queries": sums.queries,
            "mask_input": mask_name,
            "notes": notes,
        }
    )
