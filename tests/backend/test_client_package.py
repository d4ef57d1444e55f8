"""kneeboard_client stands alone: it imports (and `kneeboard check` runs to its verdict) in an interpreter where
the server's and the engine's packages cannot be imported; its own pyproject builds a wheel of just it. And the
check's rules, JUnit XML and Markdown, on summaries shaped as the API returns them."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from kneeboard_client.errors import CheckError
from kneeboard_client.reports import CheckReport, junit_xml, markdown
from kneeboard_client.thresholds import (
    check_limit,
    check_regression,
    metric_value,
    output_metrics,
    parse_limit,
    parse_regression,
    skipped_regression,
)
from tests.support.services import REPO_ROOT, free_port

BLOCKED = ("torch", "onnxruntime", "onnx", "sqlalchemy", "celery", "fastapi", "numpy", "backend", "worker")


def run_blocked(code: str, path: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh isolated interpreter (-I: no PYTHONPATH, no cwd on sys.path) that finds packages
    in `path` and the venv, where importing any of BLOCKED raises."""
    prelude = f"""
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {BLOCKED!r}:
                    raise ImportError("blocked in this test: " + name)
                return None
        sys.meta_path.insert(0, Block())
        sys.path.insert(0, {str(path)!r})
    """
    script = textwrap.dedent(prelude) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-I", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=60
    )


CHECK_UNREACHABLE = """
    import kneeboard_client, kneeboard_client.cli
    print("loaded from", kneeboard_client.__file__)
    kneeboard_client.cli.main(["check", "--server", "{server}", "--project", "p", "--golden", "g.onnx",
                               "--compressed", "c.onnx", "--dataset", "d.npz", "--max", "kl_mean=0.01"])
"""


def test_the_client_imports_and_checks_without_the_server_packages(tmp_path: Path) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    result = run_blocked(CHECK_UNREACHABLE.format(server=server), REPO_ROOT, tmp_path)
    assert result.returncode == 2, result.stderr  # an error verdict from the check itself, not an ImportError
    assert f"loaded from {REPO_ROOT / 'kneeboard_client' / '__init__.py'}" in result.stdout
    assert f"cannot reach the Kneeboard server at {server}" in result.stderr
    # The blocker works: the server's CLI (which embeds the same check) cannot be imported under it.
    control = run_blocked("import backend.cli", REPO_ROOT, tmp_path)
    assert control.returncode == 1 and "ImportError: blocked in this test: backend" in control.stderr


SERVER_COMMAND = """
import sys
import kneeboard_client.cli
try:
    kneeboard_client.cli.main(["up"])
except SystemExit as stop:
    print(stop.code, file=sys.stderr)
    raise
"""


def test_the_server_commands_are_found_by_entry_point_not_by_import(tmp_path: Path) -> None:
    """The client's `kneeboard` hands other commands to the server's `kneeboard` console script when one is
    installed (here: backend.cli.main), and without the server package says it is the client-only install;
    kneeboard_client imports nothing of backend (no import cycle between the two packages)."""
    from backend import cli as server_cli
    from kneeboard_client import cli as client_cli

    assert client_cli._server_main() is server_cli.main
    assert "backend" not in (REPO_ROOT / "kneeboard_client" / "cli.py").read_text().split('"""', 2)[2]
    result = run_blocked(SERVER_COMMAND, REPO_ROOT, tmp_path)
    assert result.returncode == 1 and "client-only install" in result.stderr, result.stderr


@pytest.mark.slow
def test_its_own_pyproject_builds_a_wheel_of_just_the_client(tmp_path: Path) -> None:
    pytest.importorskip("setuptools", reason="builds without network: needs setuptools in the venv")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path),
         str(REPO_ROOT / "kneeboard_client")],
        check=True, capture_output=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("kneeboard_client-*.whl")
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(unpacked)
    assert {n.split("/")[0] for n in names} == {
        "kneeboard_client",
        wheel.name.split("-py3")[0] + ".dist-info",
    }
    entry_points = next(unpacked.glob("*.dist-info/entry_points.txt")).read_text()
    assert "kneeboard = kneeboard_client.cli:main" in entry_points
    assert "kneeboard-check = kneeboard_client.cli:check_main" in entry_points
    result = run_blocked(
        CHECK_UNREACHABLE.format(server=f"http://127.0.0.1:{free_port()}"), unpacked, tmp_path
    )
    assert result.returncode == 2, result.stderr
    assert f"loaded from {unpacked / 'kneeboard_client' / '__init__.py'}" in result.stdout


def summary(**metrics: object) -> dict[str, object]:
    """A fidelity summary with the shape GET /jobs/{id}/fidelity returns (primary output, outputs by name)."""
    return {"n_samples": 10, "primary_output": "logits", "outputs": {"logits": metrics, "aux": {}}}


def test_metric_names_resolve_to_the_summary_keys() -> None:
    metrics = {
        "kl_mean_nats": 0.02,
        "top1_match": 0.9,
        "sqnr_db": None,
        "sqnr_db_infinite": True,
        "cosine_mean": None,
        "labels": {"top1_accuracy_drop_pp": 1.5, "calibration": {"ece_shift": -0.01}},
    }
    assert metric_value(metrics, "kl_mean") == ("kl_mean_nats", 0.02)
    assert metric_value(metrics, "top1_accuracy_drop_pp") == ("labels.top1_accuracy_drop_pp", 1.5)
    assert metric_value(metrics, "ece_shift") == ("labels.calibration.ece_shift", -0.01)
    assert metric_value(metrics, "sqnr_db") == ("sqnr_db", math.inf)  # exact: +inf, not undefined
    assert metric_value(metrics, "cosine_mean") == ("cosine_mean", None)
    with pytest.raises(
        CheckError, match=r"metric 'kl' is not in the fidelity summary; numeric metrics: kl_mean_nats"
    ):
        metric_value(metrics, "kl")
    assert output_metrics(summary(top1_match=1.0), None) == ("logits", {"top1_match": 1.0})
    with pytest.raises(CheckError, match="output 'probs' is not in the fidelity summary"):
        output_metrics(summary(), "probs")


def test_limits_pass_at_the_bound_and_fail_beyond_it() -> None:
    metrics = {"kl_mean_nats": 0.01, "top1_match": 0.995, "cosine_mean": None}
    assert check_limit(metrics, parse_limit("kl_mean=0.01", "max")).passed
    assert not check_limit(metrics, parse_limit("kl_mean=0.0099", "max")).passed
    assert check_limit(metrics, parse_limit("top1_match=0.995", "min")).passed
    failed = check_limit(metrics, parse_limit("top1_match=0.996", "min"))
    assert not failed.passed and failed.message == "top1_match = 0.995 is below the minimum 0.996"
    undefined = check_limit(metrics, parse_limit("cosine_mean=0.9", "min"))
    assert not undefined.passed and "undefined" in undefined.message
    for bad in ("kl_mean", "kl_mean=", "kl mean=1", "kl_mean=nan", "kl_mean=abc"):
        with pytest.raises(CheckError):
            parse_limit(bad, "max")
    with pytest.raises(CheckError, match="cannot be negative"):
        parse_regression("kl_mean=-5%")


def test_a_regression_is_a_move_in_the_worse_direction() -> None:
    baseline = {"kl_mean_nats": 0.02, "top1_match": 0.99, "sqnr_db": 30.0}
    ten_percent = parse_regression("kl_mean=10%")
    # KL gets worse as it rises: +10 % is allowed, +15 % is not, and any fall is an improvement.
    assert check_regression({"kl_mean_nats": 0.022}, baseline, ten_percent).passed
    worse = check_regression({"kl_mean_nats": 0.023}, baseline, ten_percent)
    assert not worse.passed and worse.baseline == 0.02 and "+15% worse" in worse.message
    assert check_regression({"kl_mean_nats": 0.001}, baseline, ten_percent).passed
    # Agreement and SQNR get worse as they fall; an absolute allowance has no %.
    absolute = parse_regression("top1_match=0.005")
    assert check_regression({"top1_match": 0.985}, baseline, absolute).passed
    assert not check_regression({"top1_match": 0.984}, baseline, absolute).passed
    assert check_regression({"top1_match": 1.0}, baseline, absolute).passed
    sqnr = parse_regression("sqnr_db=10%")
    assert not check_regression({"sqnr_db": 26.0}, baseline, sqnr).passed
    assert check_regression({"sqnr_db": None, "sqnr_db_infinite": True}, baseline, sqnr).passed


def test_junit_and_markdown_say_what_failed() -> None:
    metrics = {"kl_mean_nats": 0.5, "top1_match": 1.0}
    rules = [parse_limit("kl_mean=0.01", "max"), parse_limit("top1_match=0.99", "min")]
    report = CheckReport(
        outcomes=[
            *(check_limit(metrics, r) for r in rules),
            skipped_regression(parse_regression("kl_mean=5%"), "none"),
        ],
        report_url="http://kb.example/#/jobs/42",
        job_id="42",
        golden="golden.onnx",
    )
    assert report.exit_code == 1
    root = ET.fromstring(junit_xml(report))
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "3",
        "1",
        "0",
        "1",
    )
    cases = suite.findall("testcase")
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("message") == "kl_mean_nats = 0.5 is above the maximum 0.01"
    assert cases[1].find("failure") is None and cases[2].find("skipped") is not None
    text = markdown(report)
    assert text.startswith("## ❌ Kneeboard fidelity check failed")
    assert (
        "| `kl_mean_nats <= 0.01` | 0.5 | — | **FAIL**: kl_mean_nats = 0.5 is above the maximum 0.01 |"
        in text
    )
    assert "1 of 2 checks passed. 1 skipped." in text and "(http://kb.example/#/jobs/42)" in text

    error = CheckReport(error="cannot reach the Kneeboard server at http://x: refused")
    assert error.exit_code == 2
    suite = ET.fromstring(junit_xml(error)).find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("tests") == "1"
    assert "The check could not run: cannot reach the Kneeboard server" in markdown(error)


def test_the_readme_shows_the_check_that_the_ci_example_runs() -> None:
    import yaml

    readme = (REPO_ROOT / "README.md").read_text().split("## Kneeboard in CI", 1)[1]
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    workflow = yaml.safe_load((REPO_ROOT / "docs" / "ci" / "github-actions.yml").read_text())
    steps = next(iter(workflow["jobs"].values()))["steps"]
    run = next(s["run"] for s in steps if "kneeboard check" in s.get("run", ""))

    def lines(text: str) -> list[str]:
        return [line.strip() for line in text.strip().splitlines()]

    assert lines(block) == lines(run)
