"""Which compressed tensor or module stands for each golden layer.

ONNX vs ONNX: tensors match by name; in a QDQ graph the output of the DequantizeLinear that re-quantizes a
tensor, ``<name>_DequantizeLinear_Output`` (or ``..._Output_1``), stands for the float tensor ``<name>``, as
in onnxruntime.quantization.qdq_loss_debug; graph inputs quantized that way appear as layers too (op type
"Input"). Tensors consumed only by QuantizeLinear (the pre-quantization values) are not layers of their
own. torch.export vs torch.export: leaf modules match by module path. A torch.export golden model and an ONNX
compressed one exported from it match by module call (cross_format.py); otherwise across formats layers
match only through `name_map` (golden name -> compressed name), which takes precedence over automatic
matching.

ONNX vs ONNX layers that names leave unmatched (a third party's export, a re-export, fused ops) are then
matched by graph structure (worker.engine.layer_matching): each weighted golden layer's output tensor
(after its folded bias / activation / QDQ) pairs with its structural counterpart's. `details`, when
given, receives per golden name the layer's canonical id, aliases, how it was matched and a confidence."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from worker.engine.layer_profile.accumulate import LayerPair
from worker.engine.layer_profile.results import LayerFidelity
from worker.engine.layer_profile.sides import INPUT_OP_TYPE, Side

DEQUANT_OUTPUT_SUFFIXES = ("_DequantizeLinear_Output", "_DequantizeLinear_Output_1")
"""Names onnxruntime's QDQ quantizer gives the dequantized copy of a tensor (quant_utils.DEQUANT_OUTPUT_SUFFIX
and qdq_loss_debug's second-consumer variant)."""


@dataclass
class MatchInfo:
    """How one golden layer was paired: `canonical` its one identity (torch module path when the model
    records it), `aliases` its other names, `method` "name_map" / "name" / "structure" / "weights",
    `confidence` in [0, 1] (1 for names; the structural score otherwise, see layer_matching.align)."""

    canonical: str
    method: str
    confidence: float
    aliases: list[str] = field(default_factory=list)
    compressed_canonical: str | None = None


def _tensor_ids(side: Side) -> dict[str, tuple[str, list[str]]]:
    """ONNX tensor -> (canonical id of its producing node's layer, aliases); {} for other formats."""
    model: Any = getattr(side, "model", None)
    if model is None:
        return {}
    from worker.engine.inspection.identity import canonical_onnx_ids, node_label

    graph = model.graph
    ids = canonical_onnx_ids(graph, range(len(graph.node)))
    out: dict[str, tuple[str, list[str]]] = {}
    for index, node in enumerate(graph.node):
        for name in node.output:
            if name:
                aliases = [a for a in dict.fromkeys([name, node_label(node, index)]) if a != ids[index]]
                out[name] = (ids[index], aliases)
    return out


def _alias_map(
    ids: Mapping[str, tuple[str, list[str]]], layers: Mapping[str, str], names: Collection[str]
) -> dict[str, str]:
    """Alias or canonical id -> the tensor it stands for: a weighted layer's id -> its (fused) output
    tensor, a node name -> its output, a module path -> the first tensor it produces."""
    out: dict[str, str] = dict(layers)
    for tensor, (canonical, aliases) in ids.items():
        if tensor not in names:
            continue
        for alias in [canonical, *aliases]:
            if alias != tensor:
                out.setdefault(alias, tensor)
    return {alias: tensor for alias, tensor in out.items() if alias not in names}


def _structural_pairs(golden: Side, compressed: Side, notes: list[str]) -> list[Any]:
    """Structural matches of two ONNX sides ([] when either is not ONNX or matching fails)."""
    g_model: Any = getattr(golden, "model", None)
    c_model: Any = getattr(compressed, "model", None)
    if g_model is None or c_model is None:
        return []
    from worker.engine.layer_matching import match_onnx_models

    try:
        result = match_onnx_models(
            g_model, c_model, getattr(golden, "folder", None), getattr(compressed, "folder", None)
        )
    except Exception as exc:  # a graph the matcher cannot read: name matching stands alone
        notes.append(f"Structural layer matching failed, layers matched by name only: {exc}")
        return []
    return list(result.matches)


def _cross_format(golden: Side, compressed: Side) -> dict[str, str]:
    """torch golden vs ONNX compressed: golden layer name -> the compressed tensor of the same module call
    (cross_format.py); {} otherwise (ONNX golden vs torch compressed matches through a name map only)."""
    from worker.engine.layer_profile.cross_format import cross_format_targets

    call_outputs = getattr(golden, "call_outputs", None)
    model: Any = getattr(compressed, "model", None)
    if golden.family != "torch" or compressed.family != "onnx" or call_outputs is None or model is None:
        return {}
    onnx_outputs = [value.name for value in model.graph.output]
    program_outputs = getattr(golden, "program_outputs", [])
    return cross_format_targets(call_outputs, program_outputs, compressed.order, onnx_outputs)


def _auto_match(
    name: str,
    golden: Side,
    golden_names: Collection[str],
    compressed: Side,
    targets: Collection[str],
    across: Mapping[str, str],
) -> str | None:
    """The compressed tensor standing for golden `name`: across formats the same module call's output
    (`across`); its dequantized QDQ copy (unless the golden model has that copy too, being quantized
    itself), else the same name."""
    if golden.family != compressed.family:
        name = across.get(name, "")
        if not name:
            return None
        golden_names = ()
    if compressed.family == "onnx":
        for suffix in DEQUANT_OUTPUT_SUFFIXES:
            if name + suffix in targets and name + suffix not in golden_names:
                return name + suffix
    return name if name in targets else None


def match_layers(
    golden: Side,
    compressed: Side,
    name_map: Mapping[str, str],
    notes: list[str],
    details: dict[str, MatchInfo] | None = None,
) -> list[LayerPair]:
    """Pair golden and compressed names (name_map first, then by name, then by graph structure), in golden
    order; `details` (optional) receives each pair's identity, method and confidence."""
    same = golden.family == compressed.family
    across = {} if same else _cross_format(golden, compressed)
    if not same and not name_map and not across:
        notes.append(
            f"The golden model is {golden.family} and the compressed one {compressed.family}: their layers can "
            "only be matched through a name mapping (golden name -> compressed name) when the ONNX model "
            "carries no torch module scopes (torch.onnx.export(..., dynamo=True) writes them), and none was "
            "given."
        )
    golden_names, compressed_names = set(golden.order), set(compressed.order)
    structural = _structural_pairs(golden, compressed, notes)
    g_ids, c_ids = _tensor_ids(golden), _tensor_ids(compressed)
    g_alias = _alias_map(g_ids, {m.golden: m.golden_output for m in structural}, golden_names)
    c_alias = _alias_map(c_ids, {m.compressed: m.compressed_output for m in structural}, compressed_names)
    name_map = {g_alias.get(g, g): c_alias.get(c, c) for g, c in name_map.items()}  # any alias goes
    for g, c in name_map.items():
        if g not in golden_names:
            notes.append(f"name_map: the golden model has no layer or float tensor {g!r}.")
        elif c and c not in compressed_names:  # "" leaves the layer unmatched on purpose
            notes.append(f"name_map: the compressed model has no layer or float tensor {c!r} (for {g!r}).")
    targets = set(compressed.candidates)
    auto_names = set(golden.candidates) | {n for n in golden.order if golden.op_type(n) == INPUT_OP_TYPE}
    chosen: dict[str, tuple[str, str, float]] = {}
    for name in golden.order:
        if name in name_map:
            if name_map[name] in compressed_names:
                chosen[name] = (name_map[name], "name_map", 1.0)
        elif name in auto_names:
            target = _auto_match(name, golden, golden_names, compressed, targets, across)
            if target is not None:
                chosen[name] = (target, "name" if same else "module", 1.0)
    used = {target for target, _, _ in chosen.values()}
    layer_ids: dict[str, tuple[str, str]] = {}
    added = 0
    for match in structural:
        layer_ids.setdefault(match.golden_output, (match.golden, match.compressed))
        g, c = match.golden_output, match.compressed_output
        if g in chosen or g in name_map or c in used or g not in golden_names or c not in compressed_names:
            continue
        chosen[g] = (c, match.method, match.confidence)
        used.add(c)
        added += 1
    if added:
        notes.append(
            f"{added} layers named differently in the two models were matched by graph structure "
            "(op class, weight shape, dequantized-weight cosine); check their confidence."
        )
    pairs = [LayerPair(n, chosen[n][0], golden.op_type(n)) for n in golden.order if n in chosen]
    if details is not None:
        layer_names = {ids[0] for g, ids in layer_ids.items() if g in chosen}
        for pair in pairs:
            target, method, confidence = chosen[pair.golden]
            canonical, aliases = g_ids.get(pair.golden, (pair.golden, []))
            c_canonical = c_ids.get(target, (target, []))[0]
            if pair.golden in layer_ids:  # the (fused) output of a weighted layer: named after that layer
                canonical, c_canonical = layer_ids[pair.golden]
                aliases = [a for a in dict.fromkeys([pair.golden, *aliases]) if a != canonical]
            elif canonical in layer_names:  # e.g. a Conv's pre-activation tensor: the id names its ReLU's row
                canonical = f"{canonical}/{pair.golden}"
            details[pair.golden] = MatchInfo(canonical, method, confidence, aliases, c_canonical)
    return pairs


def annotate(layers: Sequence[LayerFidelity], details: Mapping[str, MatchInfo]) -> list[LayerFidelity]:
    """The profile's rows with each layer's identity and how it was matched (see match_layers' details)."""
    out = []
    for layer in layers:
        info = details.get(layer.name)
        if info is None:
            out.append(layer)
            continue
        out.append(
            replace(
                layer,
                canonical_id=info.canonical,
                aliases=tuple(info.aliases),
                match_method=info.method,
                match_confidence=info.confidence,
            )
        )
    return out


def matching_note(golden: Side, compressed: Side) -> str:
    """How layers were matched for this pair of formats."""
    if golden.family == compressed.family == "onnx":
        return (
            "ONNX tensors matched by name; a QDQ DequantizeLinear output '<name>_DequantizeLinear_Output' stands "
            "for the float tensor '<name>' (as in onnxruntime's qdq_loss_debug). onnxruntime ran with graph "
            "optimizations disabled."
        )
    if golden.family == compressed.family:
        return "torch.export leaf modules matched by module path (k-th call of a module: 'path#k', k >= 2)."
    return (
        "torch module calls matched to the ONNX tensors named after the call's last op (torch's dynamo "
        "exporter names tensors so), and through the name mapping; local values need both models in the same "
        "format."
    )
