"""Structural matching of two ONNX graphs whose layers are named differently (a third party's quantized
export, a re-export, QDQ insertion, fused ops): which compressed layer stands for each golden layer, with
a confidence, and what is left unmatched. See graph_layers (normalisation) and align (the alignment)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.engine.layer_matching.align import align
from worker.engine.layer_matching.graph_layers import GraphLayer, graph_layers

if TYPE_CHECKING:
    import onnx


@dataclass(frozen=True)
class LayerMatch:
    golden: str
    """Canonical id of the golden layer (module path, else node name)."""
    compressed: str
    """Canonical id of the compressed layer."""
    golden_node: str
    compressed_node: str
    op_class: str
    golden_output: str
    """The golden tensor standing for the layer's output (after folded bias / activation / QDQ)."""
    compressed_output: str
    method: str
    """"structure" (order-preserving alignment) or "weights" (paired by weight similarity alone)."""
    confidence: float
    weight_cosine: float | None


@dataclass
class MatchResult:
    matches: list[LayerMatch] = field(default_factory=list)
    unmatched_golden: list[str] = field(default_factory=list)
    unmatched_compressed: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "matches": [asdict(m) for m in self.matches],
            "unmatched_golden": list(self.unmatched_golden),
            "unmatched_compressed": list(self.unmatched_compressed),
        }


def match_layers(golden: Sequence[GraphLayer], compressed: Sequence[GraphLayer]) -> MatchResult:
    pairs = align(golden, compressed)
    result = MatchResult()
    for i, j, scored, method in pairs:
        g, c = golden[i], compressed[j]
        result.matches.append(
            LayerMatch(
                golden=g.canonical,
                compressed=c.canonical,
                golden_node=g.node_name,
                compressed_node=c.node_name,
                op_class=g.op_class,
                golden_output=g.output,
                compressed_output=c.output,
                method=method,
                confidence=round(scored.score, 4),
                weight_cosine=None if scored.cosine is None else round(scored.cosine, 6),
            )
        )
    used_g = {i for i, _, _, _ in pairs}
    used_c = {j for _, j, _, _ in pairs}
    result.unmatched_golden = [g.canonical for i, g in enumerate(golden) if i not in used_g]
    result.unmatched_compressed = [c.canonical for j, c in enumerate(compressed) if j not in used_c]
    return result


def match_onnx_models(
    golden: onnx.ModelProto,
    compressed: onnx.ModelProto,
    golden_folder: Path | None = None,
    compressed_folder: Path | None = None,
) -> MatchResult:
    """Match the weighted layers of two ONNX models (folders: where their external data lies)."""
    return match_layers(graph_layers(golden, golden_folder), graph_layers(compressed, compressed_folder))


def match_onnx_files(golden: Path, compressed: Path) -> MatchResult:
    import onnx

    return match_onnx_models(
        onnx.load(str(golden), load_external_data=False),
        onnx.load(str(compressed), load_external_data=False),
        Path(golden).parent,
        Path(compressed).parent,
    )
