"""Which fidelity block a sweep point's frontier objectives use (worker/engine/sweep/deployed_fidelity.py),
on point documents shaped like `SweepPoint.to_dict()`: the chosen export's measured figures when the point is
executable and the file was run, else the simulation with the reason. The end-to-end check against
onnxruntime's own run of a real file is tests/backend/test_sweep_measured_frontier_job.py."""

from __future__ import annotations

from typing import Any

from worker.engine.sweep.deployed_fidelity import chosen_export, deployed_fidelity, with_deployed_fidelity
from worker.jobs.sweep import point_objectives

SIMULATED = {"kl_mean": 0.020, "top1_agreement": 0.95, "task_metrics": {"nll": 2.9417}}
MEASURED = {"kl_mean": 0.031, "top1_agreement": 0.93, "task_metrics": {"nll": 2.9377}}


def _manifest(kind: str, measured: dict[str, Any] | None) -> dict[str, Any]:
    return {"kind": kind, "file": f"p.{kind}.onnx", "metrics": {"simulated": SIMULATED, "measured": measured}}


def _point(executable: bool, *exports: dict[str, Any]) -> dict[str, Any]:
    return {
        "fidelity": dict(SIMULATED),
        "cost": {"size_bytes": 100.0},
        "runtime": {"executable": executable},
        "exports": list(exports),
    }


def test_a_measured_real_export_gives_the_objectives_and_keeps_the_simulation_beside() -> None:
    point = _point(
        True,
        _manifest("simulated-float", {"kl_mean": 0.020}),
        _manifest("real-matmulnbits", MEASURED),
    )
    found = deployed_fidelity(point)
    assert (found.source, found.export_kind) == ("measured", "real-matmulnbits")
    assert found.fidelity == MEASURED and found.simulated == SIMULATED
    assert found.note == "measured on the deployed file (real-matmulnbits)"
    objectives = point_objectives(point, None, {})
    assert objectives["kl_mean"] == 0.031 and objectives["top1_agreement"] == 0.93
    assert objectives["task.nll"] == 2.9377 and objectives["size_bytes"] == 100.0
    doc = with_deployed_fidelity(point)
    assert doc["fidelity"] == MEASURED and doc["fidelity_simulated"] == SIMULATED
    assert (doc["fidelity_source"], doc["fidelity_export_kind"]) == ("measured", "real-matmulnbits")
    assert with_deployed_fidelity(doc) == doc  # applying it again changes nothing
    assert point_objectives(doc, None, {}) == objectives


def test_points_without_a_measured_runnable_export_keep_the_simulation_and_say_why() -> None:
    cases = {
        "simulated: the point was not exported": _point(True),
        "simulated: no runnable export (the simulated file is not a runtime form)": _point(
            False, _manifest("simulated-float", {"kl_mean": 0.5})
        ),
        "simulated: the real-int8-qdq file was not run on the evaluation samples": _point(
            True, _manifest("simulated-float", None), _manifest("real-int8-qdq", None)
        ),
    }
    for note, point in cases.items():
        found = deployed_fidelity(point)
        assert (found.source, found.export_kind, found.note) == ("simulated", None, note)
        assert found.fidelity == SIMULATED
        doc = with_deployed_fidelity(point)
        assert doc["fidelity_simulated"] is None and doc["fidelity"] == SIMULATED
        assert point_objectives(point, None, {})["kl_mean"] == 0.020


def test_an_executable_float_file_is_the_deployed_one() -> None:
    """A pruned or low-rank point runs as its simulated-float file (the one timed): that file's figures."""
    point = _point(True, _manifest("simulated-float", MEASURED))
    assert deployed_fidelity(point).source == "measured"
    assert deployed_fidelity(point).export_kind == "simulated-float"


def test_the_chosen_export_is_the_last_real_form_else_the_last_file() -> None:
    sim, real = _manifest("simulated-float", None), _manifest("real-int8-weights", None)
    assert chosen_export([sim, real]) is real and chosen_export([real, sim]) is real
    assert chosen_export([sim]) is sim and chosen_export([]) is None and chosen_export(None) is None
