"""Attention-map fidelity (issue 13, transformer internals): how far the compressed model's attention
distributions move from the golden model's, per layer and head.

- folding.py: the format-free part: per layer x head KL / JS sums and the batch loop (one code for all).
- onnx_side.py: ONNX graphs (Softmax nodes; fused attention operators get a note).
- torch_side.py: torch.export programs (aten softmaxes, scaled-dot-product attention decomposed to expose
  them); TorchScript gets a note.
- pairs.py: `attention_fidelity_of`, the one entry point, for any pair of those formats, mixed included.

The names below keep the module's former import path (worker.engine.attention) working.
"""

from worker.engine.attention.folding import (
    ATTENTION_RANK,
    BYTES_PER_VALUE,
    AttentionCapture,
    AttentionOutcome,
    compare_captures,
    js_rows,
    kl_rows,
    mask_input,
)
from worker.engine.attention.onnx_side import AttentionNode, attention_softmaxes, fused_attention_ops
from worker.engine.attention.pairs import attention_fidelity_of

__all__ = [
    "ATTENTION_RANK",
    "BYTES_PER_VALUE",
    "AttentionCapture",
    "AttentionNode",
    "AttentionOutcome",
    "attention_fidelity_of",
    "attention_softmaxes",
    "compare_captures",
    "fused_attention_ops",
    "js_rows",
    "kl_rows",
    "mask_input",
]
