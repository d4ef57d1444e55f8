"""The comparison's batch, chosen from the golden model's activations (issue 32: whole jobs within the
memory budget).

A batch's memory is dominated by its largest activation times the batch, held by onnxruntime's arena for
both models. The job's batch_size is the most samples a pass may take; for a model whose largest tensor is
large the pass takes fewer, so that tensor stays within ACTIVATION_BUDGET_BYTES, as the sensitivity scan
does (`worker.engine.sensitivity.scan.SCAN_BATCH_ACTIVATION_BYTES`, the same 40 MB). Measured on
EfficientNet-Lite0 fp32 vs int8 at 224 px (largest tensor 4.8 MB a sample), 64 samples, 1 thread, each
in a fresh process: compare_models peaked at 862 MiB in 4.7 s at batch 64 and at 270 MiB in 2.7 s at batch
8. The metrics do not depend on the batch (every sample is folded in on its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

ACTIVATION_BUDGET_BYTES = 40 << 20


def memory_batch_size(requested: int, largest_activation_bytes: int | None) -> int:
    """At most `requested` samples, and no more than keep the largest activation within the budget."""
    if not largest_activation_bytes or largest_activation_bytes <= 0:
        return requested
    return max(1, min(requested, ACTIVATION_BUDGET_BYTES // largest_activation_bytes))


def onnx_largest_activation_bytes(path: Path, feeds: Mapping[str, np.ndarray]) -> int | None:
    """Bytes of the largest tensor an ONNX model writes for one sample of `feeds` (shape inference; None
    when the shapes cannot be inferred)."""
    import onnx

    from worker.engine.inspection.onnx_macs import onnx_shape_facts

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # an unreadable file has failed to load long before: no estimate, no error here
        return None
    shapes = {name: [1, *np.shape(array)[1:]] for name, array in feeds.items()}
    return onnx_shape_facts(model, shapes).largest_value_bytes
