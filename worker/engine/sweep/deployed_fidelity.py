"""Which fidelity figures a sweep point's frontier objectives use: the deployed file's, when it was run.

A point is scored twice when it is exported: the simulation (`evaluate_point`, the point's `fidelity`) and
each export file run in onnxruntime against the golden outputs (manifest `metrics.measured`). Real-kernel
forms do not always equal the simulation (ORT's MatMulNBits grid is [-8, 7] and leaves embedding Gathers
float; quantize_static picks its own scales; fp16 computes every op in fp16): on a language model the
simulated NLL was 2.9417 and the deployed file's 2.9377. Latency and memory are measured on the chosen
export (`chosen_export`, the form a user would deploy), so the frontier's fidelity comes from the same file
whenever that file is runnable and was measured; otherwise the point keeps the simulation and says why.

`deployed_fidelity(point)` is pure: it reads a point document (`SweepPoint.to_dict()`, possibly already
rewritten by `with_deployed_fidelity`) and returns the block the objectives use and its source.
`with_deployed_fidelity(point)` returns the document with `fidelity` = that block and, beside it,
`fidelity_simulated` (the simulation, when the block is measured), `fidelity_source` ("measured" |
"simulated"), `fidelity_export_kind` (the measured file's kind) and `fidelity_note` (why, in words).
Applying it twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

FidelitySource = Literal["measured", "simulated"]

SIMULATED_ONLY_KINDS = frozenset({"simulated-float"})
"""Export kinds that are the simulation written as a file (not a runtime form) when the point is not
executable; an executable point's simulated-float file *is* its deployable form (prune, low rank)."""


def chosen_export(exports: Sequence[Mapping[str, Any]] | None) -> Mapping[str, Any] | None:
    """The export a user would deploy (and the sweep times): the last real runtime form when there is one,
    else the last file (the simulated one, which runs in onnxruntime and reproduces the point's figures)."""
    files = list(exports or [])
    real = [m for m in files if m.get("kind") not in SIMULATED_ONLY_KINDS]
    found = real or files
    return found[-1] if found else None


@dataclass(frozen=True)
class DeployedFidelity:
    fidelity: dict[str, Any]
    """The figures the objectives use: the measured ones when `source` is "measured"."""
    source: FidelitySource
    export_kind: str | None
    """The kind of the file whose measurement `fidelity` is; None when simulated."""
    simulated: dict[str, Any]
    """The simulation's figures (equal to `fidelity` when `source` is "simulated")."""
    note: str

    def fields(self) -> dict[str, Any]:
        """The point document's fields (see the module docstring)."""
        return {
            "fidelity": self.fidelity,
            "fidelity_simulated": self.simulated if self.source == "measured" else None,
            "fidelity_source": self.source,
            "fidelity_export_kind": self.export_kind,
            "fidelity_note": self.note,
        }


def deployed_fidelity(point: Mapping[str, Any]) -> DeployedFidelity:
    """The fidelity block of `point` that its frontier objectives use, and where it comes from."""
    simulated = dict(point.get("fidelity_simulated") or point.get("fidelity") or {})
    exports = point.get("exports") or []
    export = chosen_export(exports)
    executable = bool((point.get("runtime") or {}).get("executable"))

    def simulation(note: str) -> DeployedFidelity:
        return DeployedFidelity(simulated, "simulated", None, simulated, note)

    if export is None:
        return simulation("simulated: the point was not exported")
    if not executable:
        return simulation("simulated: no runnable export (the simulated file is not a runtime form)")
    measured = (export.get("metrics") or {}).get("measured")
    if not measured:
        return simulation(f"simulated: the {export.get('kind')} file was not run on the evaluation samples")
    kind = str(export.get("kind"))
    return DeployedFidelity(
        dict(measured), "measured", kind, simulated, f"measured on the deployed file ({kind})"
    )


def with_deployed_fidelity(point: Mapping[str, Any]) -> dict[str, Any]:
    """`point` with its fidelity taken from the deployed file when it was measured (module docstring)."""
    return dict(point) | deployed_fidelity(point).fields()
