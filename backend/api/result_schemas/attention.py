"""Typed response of GET /jobs/{job_id}/fidelity/attention: the attention-map fidelity of an ONNX or
torch.export pair, mixed included (issue 13, transformer internals), as the worker stores it
(worker/engine/attention/). Null numbers follow
the non-finite rule of common.py: a null KL with its ``kl_infinite`` entry true is +∞ (the compressed model
puts probability 0 where the golden one does not)."""

from __future__ import annotations

import uuid

from pydantic import Field

from backend.api.result_schemas.common import ResultModel


class AttentionLayerOut(ResultModel):
    """One attention softmax of the golden graph and the compressed graph's softmax paired with it (the
    k-th of each, in graph order)."""

    golden_node: str
    compressed_node: str
    kl: list[float | None] = Field(
        default_factory=list,
        description="Per head: mean KL(golden ‖ compressed) in nats over samples × query positions "
        "(padded queries left out when the dataset has an attention mask).",
    )
    js: list[float | None] = Field(
        default_factory=list, description="Per head: mean Jensen–Shannon divergence in nats (≤ ln 2)."
    )
    kl_infinite: list[bool] = Field(
        default_factory=list, description="Per head: whether its KL is +∞ (some row has q = 0 < p)."
    )


class FidelityAttentionOut(ResultModel):
    job_id: uuid.UUID
    layers: list[AttentionLayerOut] = Field(default_factory=list, description="In graph order.")
    heads: int = Field(default=0, description="Attention heads per layer.")
    n_samples: int = 0
    n_queries: int = Field(default=0, description="(sample, query position) pairs averaged over.")
    mask_input: str | None = Field(
        default=None, description="The dataset's attention-mask input used to leave out padded queries."
    )
    notes: list[str] = Field(default_factory=list)
    error: str | None = Field(
        default=None,
        description="Why there are no attention maps (graphs that cannot be paired, or a failure); the rest "
        "of the report is complete and the other fields are then empty.",
    )
