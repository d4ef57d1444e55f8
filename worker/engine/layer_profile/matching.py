"""Which compressed tensor or module stands for each golden layer.

ONNX vs ONNX: tensors match by name; in a QDQ graph the output of the DequantizeLinear that re-quantizes a
tensor, ``<name>_DequantizeLinear_Output`` (or ``..._Output_1``), stands for the float tensor ``<name>``, as
in onnxruntime.quantization.qdq_loss_debug; graph inputs quantized that way appear as layers too (op type
"Input"). Tensors consumed only by QuantizeLinear (the pre-quantization values) are not layers of their
own. torch.export vs torch.export: leaf modules match by module path. Across formats layers match only
through `name_map` (golden name -> compressed name), which takes precedence over automatic matching."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from worker.engine.layer_profile.accumulate import LayerPair
from worker.engine.layer_profile.sides import INPUT_OP_TYPE, Side

DEQUANT_OUTPUT_SUFFIXES = ("_DequantizeLinear_Output", "_DequantizeLinear_Output_1")
"""Names onnxruntime's QDQ quantizer gives the dequantized copy of a tensor (quant_utils.DEQUANT_OUTPUT_SUFFIX
and qdq_loss_debug's second-consumer variant)."""


def _auto_match(
    name: str, golden: Side, golden_names: Collection[str], compressed: Side, targets: Collection[str]
) -> str | None:
    """The compressed tensor standing for golden `name`: its dequantized QDQ copy (unless the golden model
    has that copy too, being quantized itself), else the same name; None across formats."""
    if golden.family != compressed.family:
        return None
    if compressed.family == "onnx":
        for suffix in DEQUANT_OUTPUT_SUFFIXES:
            if name + suffix in targets and name + suffix not in golden_names:
                return name + suffix
    return name if name in targets else None


def match_layers(
    golden: Side, compressed: Side, name_map: Mapping[str, str], notes: list[str]
) -> list[LayerPair]:
    """Pair golden and compressed names (name_map first, then automatic), in golden order."""
    same = golden.family == compressed.family
    if not same and not name_map:
        notes.append(
            f"The golden model is {golden.family} and the compressed one {compressed.family}: their layers can "
            "only be matched through a name mapping (golden name -> compressed name), and none was given."
        )
    golden_names, compressed_names = set(golden.order), set(compressed.order)
    for g, c in name_map.items():
        if g not in golden_names:
            notes.append(f"name_map: the golden model has no layer or float tensor {g!r}.")
        elif c not in compressed_names:
            notes.append(f"name_map: the compressed model has no layer or float tensor {c!r} (for {g!r}).")
    targets = set(compressed.candidates)
    auto_names = set(golden.candidates) | {n for n in golden.order if golden.op_type(n) == INPUT_OP_TYPE}
    pairs: list[LayerPair] = []
    for name in golden.order:
        if name in name_map:
            target = name_map[name] if name_map[name] in compressed_names else None
        elif name in auto_names:
            target = _auto_match(name, golden, golden_names, compressed, targets)
        else:
            target = None
        if target is not None:
            pairs.append(LayerPair(name, target, golden.op_type(name)))
    return pairs


def matching_note(golden: Side, compressed: Side) -> str:
    """How layers were matched for this pair of formats."""
    if golden.family == compressed.family == "onnx":
        return (
            "ONNX tensors matched by name; a QDQ DequantizeLinear output '<name>_DequantizeLinear_Output' stands "
            "for the float tensor '<name>' (as in onnxruntime's qdq_loss_debug). onnxruntime ran with graph "
            "optimizations disabled."
        )
    if golden.family == compressed.family:
        return "torch.export leaf modules matched by module path (k-th extra call of a module: 'path#k')."
    return "Layers matched through the name mapping only; local values need both models in the same format."
