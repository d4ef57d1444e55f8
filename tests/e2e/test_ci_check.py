"""The CI example (docs/ci/github-actions.yml) run as written against a started stack: its `kneeboard check`
step, in bash, with the workflow's environment. A regressed model (the digits CNN with 3-bit weights) fails
the build, the int8 model passes, and a bad model or an unreachable server is an error (exit 2). The JUnit
XML is read back with xml.etree against the JUnit schema's required structure, the Markdown for its verdict
and reasons; the numbers it reports are recomputed here with onnxruntime + scipy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import yaml
from onnx import numpy_helper
from scipy.special import log_softmax
from scipy.stats import entropy

from kneeboard_client.client import KneeboardClient
from tests.e2e.conftest import Stack
from tests.support.services import REPO_ROOT, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

WORKFLOW = REPO_ROOT / "docs" / "ci" / "github-actions.yml"


def _workflow() -> tuple[dict[str, str], list[dict[str, Any]]]:
    job = next(iter(yaml.safe_load(WORKFLOW.read_text())["jobs"].values()))
    return job["env"], job["steps"]


def _expand(text: str, secrets: dict[str, str], variables: dict[str, str], project: str) -> str:
    """GitHub's ${{ }} expressions that the workflow uses: secrets, `vars.X || 'default'`, the repo name."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        if expr.startswith("secrets."):
            return secrets[expr.removeprefix("secrets.")]
        if expr == "github.event.repository.name":
            return project
        var = re.fullmatch(r"vars\.(\w+)\s*\|\|\s*'([^']*)'", expr)
        assert var, f"an expression this test does not know: {expr}"
        return variables.get(var.group(1)) or var.group(2)

    return re.sub(r"\$\{\{(.*?)\}\}", one, text)


def run_workflow(
    workdir: Path, server: str, token: str, variables: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The workflow's check step and the summary step after it, as GitHub runs them (bash -e), in `workdir`."""
    env_spec, steps = _workflow()
    secrets = {"KNEEBOARD_URL": server, "KNEEBOARD_API_TOKEN": token}
    variables = variables or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEBOARD_")}
    env |= {k: _expand(v, secrets, variables, "ci-check") for k, v in env_spec.items()}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the installed `kneeboard`
    env["GITHUB_STEP_SUMMARY"] = str(workdir / "step-summary.md")
    check = next(s for s in steps if "kneeboard check" in s.get("run", ""))
    summary = next(s for s in steps if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    result = subprocess.run(
        ["bash", "-e", "-c", _expand(check["run"], secrets, variables, "ci-check")],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    # `if: always()`: the summary step runs after a failed check too.
    assert summary.get("if") == "always()"
    subprocess.run(["bash", "-e", "-c", summary["run"]], cwd=workdir, env=env, check=True, timeout=60)
    return result


def _paths(step_run: str) -> dict[str, str]:
    return dict(re.findall(r"--(golden|compressed|dataset|junit|markdown) (\S+)", step_run))


def checkout(tmp: Path, golden: Path, compressed: Path, dataset: Path) -> Path:
    """A repository checkout with the files where the workflow's check step expects them."""
    _, steps = _workflow()
    paths = _paths(next(s["run"] for s in steps if "kneeboard check" in s.get("run", "")))
    for role, src in (("golden", golden), ("compressed", compressed), ("dataset", dataset)):
        dst = tmp / paths[role]
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    return tmp


def low_bit_weights(src: Path, dst: Path, bits: int) -> Path:
    """The model with every weight matrix / kernel rounded to `bits`-bit symmetric levels per tensor."""
    model = onnx.load(str(src))
    top = 2 ** (bits - 1) - 1
    for tensor in model.graph.initializer:
        w = numpy_helper.to_array(tensor)
        if w.dtype == np.float32 and w.ndim >= 2:
            scale = float(np.abs(w).max()) / top
            q = np.clip(np.round(w / scale), -top - 1, top) * scale
            tensor.CopyFrom(numpy_helper.from_array(q.astype(np.float32), tensor.name))
    onnx.save(model, str(dst))
    return dst


def _logits(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0], dtype=np.float64)


def reference(golden: Path, compressed: Path, dataset: Path) -> dict[str, float]:
    """KL(golden‖compressed) mean (nats) and top-1 agreement, from onnxruntime and scipy."""
    x = np.load(dataset)["input"]
    p, q = _logits(golden, x), _logits(compressed, x)
    kl = entropy(np.exp(log_softmax(p, axis=1)), np.exp(log_softmax(q, axis=1)), axis=1)
    return {"kl_mean_nats": float(kl.mean()), "top1_match": float(np.mean(p.argmax(1) == q.argmax(1)))}


def read_junit(path: Path) -> tuple[ET.Element, list[ET.Element]]:
    """The JUnit schema's required structure: <testsuites> of <testsuite name tests failures errors> whose
    counts match its <testcase classname name> children, each with at most one failure / error / skipped."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    for attribute in ("name", "tests", "failures", "errors", "time"):
        assert attribute in suite.attrib, attribute
    cases = suite.findall("testcase")
    assert int(suite.get("tests", "-1")) == len(cases)
    for kind in ("failure", "error", "skipped"):
        count = sum(len(c.findall(kind)) for c in cases)
        assert int(suite.get(kind + "s" if kind != "skipped" else "skipped", "0")) == count, kind
    for case in cases:
        assert case.get("classname") and case.get("name")
        assert len([e for e in case if e.tag in ("failure", "error", "skipped")]) <= 1
    return suite, cases


def _value(outcome_message: str, key: str) -> float:
    found = re.search(rf"{key} = ([-+0-9.eE]+)", outcome_message)
    assert found, outcome_message
    return float(found.group(1))


@pytest.fixture(scope="module")
def stack(make_stack_module: Any) -> Stack:
    s: Stack = make_stack_module()
    s.add_worker("ci")
    return s


def test_the_ci_example_fails_a_regressed_model_and_passes_a_good_one(
    stack: Stack, demo_files: Any, tmp_path: Path
) -> None:
    token = stack.account.token
    good = checkout(tmp_path / "good", demo_files.golden_onnx, demo_files.int8_onnx, demo_files.test_npz)
    result = run_workflow(good, stack.base_url, token)
    assert result.returncode == 0, result.stdout + result.stderr
    suite, cases = read_junit(good / "kneeboard-junit.xml")
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    # The first run has no baseline: its regression check is skipped, not passed.
    assert [c.find("skipped") is not None for c in cases] == [False, False, True]
    expected = reference(demo_files.golden_onnx, demo_files.int8_onnx, demo_files.test_npz)
    kl_case = next(c for c in cases if c.get("name", "").startswith("kl_mean_nats <="))
    assert _value(kl_case.findtext("system-out") or "", "kl_mean_nats") == pytest.approx(
        expected["kl_mean_nats"], rel=1e-3, abs=1e-6
    )
    good_job = next(p.get("value") for p in suite.iter("property") if p.get("name") == "job_id")
    assert good_job and f"#/jobs/{good_job}" in result.stdout  # the link to the report page
    markdown = (good / "kneeboard-summary.md").read_text()
    assert markdown.startswith("## ✅ Kneeboard fidelity check passed")
    assert "2 of 2 checks passed. 1 skipped." in markdown
    assert (good / "step-summary.md").read_text() == markdown

    # 3-bit weights: KL and agreement beyond the limits, and far worse than the int8 run (the baseline).
    regressed = low_bit_weights(demo_files.golden_onnx, tmp_path / "w3.onnx", bits=3)
    expected = reference(demo_files.golden_onnx, regressed, demo_files.test_npz)
    assert expected["kl_mean_nats"] > 0.01 and expected["top1_match"] < 0.99  # the model is regressed
    bad = checkout(tmp_path / "bad", demo_files.golden_onnx, regressed, demo_files.test_npz)
    result = run_workflow(bad, stack.base_url, token)
    assert result.returncode == 1, result.stdout + result.stderr
    suite, cases = read_junit(bad / "kneeboard-junit.xml")
    failures = {c.get("name"): c.find("failure") for c in cases}
    assert suite.get("failures") == "3" and all(f is not None for f in failures.values()), failures
    kl_failure = failures["kl_mean_nats <= 0.01"]
    assert kl_failure is not None
    assert "is above the maximum 0.01" in kl_failure.get("message", "")
    assert _value(kl_failure.get("message", ""), "kl_mean_nats") == pytest.approx(
        expected["kl_mean_nats"], rel=1e-3
    )
    baseline = next(p.get("value") for p in suite.iter("property") if p.get("name") == "baseline_job_id")
    assert baseline == good_job  # `latest`: the newest earlier run of the same golden model
    markdown = (bad / "kneeboard-summary.md").read_text()
    assert markdown.startswith("## ❌ Kneeboard fidelity check failed")
    assert "0 of 3 checks passed." in markdown
    assert re.search(r"\*\*FAIL\*\*: top1_match = [0-9.]+ is below the minimum 0.99", markdown)
    assert re.search(
        r"\*\*FAIL\*\*: kl_mean_nats = .* vs baseline .*worse, exceeds the allowed 50%", markdown
    )

    # A pinned baseline (the repository variable): the good model again passes, regression included.
    result = run_workflow(good, stack.base_url, token, {"KNEEBOARD_BASELINE": good_job})
    assert result.returncode == 0, result.stdout + result.stderr
    suite, cases = read_junit(good / "kneeboard-junit.xml")
    assert [c.find("skipped") is None and c.find("failure") is None for c in cases] == [True] * 3

    # A release run tags its job (variable KNEEBOARD_TAG); a later check names the tag as its baseline (variable
    # KNEEBOARD_BASELINE): the regressed model fails against the tagged run, and an unknown tag is an error.
    result = run_workflow(good, stack.base_url, token, {"KNEEBOARD_TAG": "release-1"})
    assert result.returncode == 0, result.stdout + result.stderr
    suite, _ = read_junit(good / "kneeboard-junit.xml")
    release_job = next(p.get("value") for p in suite.iter("property") if p.get("name") == "job_id")
    assert release_job and release_job != good_job
    with KneeboardClient(stack.base_url, token=token) as client:
        assert client.job(release_job)["tags"] == ["release-1"]
    result = run_workflow(bad, stack.base_url, token, {"KNEEBOARD_BASELINE": "release-1"})
    assert result.returncode == 1, result.stdout + result.stderr
    suite, _ = read_junit(bad / "kneeboard-junit.xml")
    baseline = next(p.get("value") for p in suite.iter("property") if p.get("name") == "baseline_job_id")
    assert baseline == release_job
    result = run_workflow(bad, stack.base_url, token, {"KNEEBOARD_BASELINE": "release-0"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--baseline 'release-0': no succeeded fidelity job of project" in result.stderr


def test_the_ci_example_is_an_error_on_a_bad_model_or_no_server(
    stack: Stack, demo_files: Any, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an ONNX model" * 10)
    repo = checkout(tmp_path / "broken", demo_files.golden_onnx, broken, demo_files.test_npz)
    result = run_workflow(repo, stack.base_url, stack.account.token)
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "kneeboard check: error: compressed model models/compressed.onnx: the server rejected it:"
        in result.stderr
    )
    suite, cases = read_junit(repo / "kneeboard-junit.xml")
    assert suite.get("errors") == "1" and cases[0].find("error") is not None
    assert (repo / "kneeboard-summary.md").read_text().startswith("## ⚠️ Kneeboard fidelity check error")

    nowhere = f"http://127.0.0.1:{free_port()}"
    result = run_workflow(repo, nowhere, stack.account.token)
    assert result.returncode == 2
    assert f"cannot reach the Kneeboard server at {nowhere}" in result.stderr

    result = run_workflow(repo, stack.base_url, "not-a-token")
    assert result.returncode == 2
    assert "refused the token" in result.stderr
