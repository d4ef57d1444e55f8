"""The name a recovery job gives the model it makes, when the launch named none: what the model is, e.g.
"digits-cnn · w4-sym-channel · AdaRound + bias correction" (the source model, the configuration it was
compressed to, and the methods that recovered it), not "digits-cnn (fp32, golden) · w4-sym-channel · recovered":
the source's decoration in parentheses describes the source, not the new model (issue 35)."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Short labels (the dashboard's METHOD_LABELS in frontend/src/recovery/training.ts, shortened for a name).
METHOD_SHORT: dict[str, str] = {
    "equalization": "CLE",
    "smoothquant": "SmoothQuant",
    "bias_correction": "bias correction",
    "adaround": "AdaRound",
    "distill": "distillation",
    "qat": "QAT",
}

_TRAILING_PARENS = re.compile(r"(\s*\([^()]*\))+\s*$")
NAME_MAX = 200


def base_name(source: str) -> str:
    """The source model's name without trailing parenthesised decoration ("digits-cnn (fp32, golden)" →
    "digits-cnn"); the name itself when nothing else would be left."""
    stripped = _TRAILING_PARENS.sub("", source).strip()
    return stripped or source.strip()


def recovered_model_name(source: str, plan_id: str, methods: Iterable[str]) -> str:
    labels = [METHOD_SHORT.get(m, m) for m in methods]
    parts = [base_name(source), plan_id, " + ".join(labels) if labels else "recovered"]
    return " · ".join(p for p in parts if p)[:NAME_MAX]
