"""No import circle among the project's modules (issue 34): every arrow between backend, worker,
dataset_readers, the client and bench runs one way, type-only imports included, so each module can be read
after the ones it imports. Checked statically on the source (tests/support/import_graph.py), so it needs no heavy imports."""

from __future__ import annotations

from pathlib import Path

from tests.support.import_graph import find_cycle, import_graph, modules_under
from tests.support.services import REPO_ROOT

PACKAGES = ("backend", "worker", "dataset_readers", "task_specs", "kneeboard_client", "bench")


def test_no_module_imports_itself_through_others() -> None:
    modules = modules_under(REPO_ROOT, PACKAGES)
    assert len(modules) > 250  # the walk found the tree, not an empty folder
    cycle = find_cycle(import_graph(modules))
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_check_would_notice_a_type_only_circle(tmp_path: Path) -> None:
    """Guard against a vacuous test: the circle issue 34 found (layer_profile's accumulate -> results ->
    shift -> calibration -> accumulate, closed by an import under TYPE_CHECKING) in miniature."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "accumulate.py").write_text("from pkg.shift import Shift\n")
    (package / "shift.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.calibration import Counter\n"
    )
    (package / "calibration.py").write_text("from . import accumulate\n")
    cycle = find_cycle(import_graph(modules_under(tmp_path, ["pkg"])))
    assert cycle is not None
    assert set(cycle) == {"pkg.accumulate", "pkg.shift", "pkg.calibration"}
