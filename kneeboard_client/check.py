"""`kneeboard check`: run a fidelity job on the server and gate CI on its numbers.

Upload (or reference by id) the golden and compressed models and the dataset, run the fidelity job with its
progress on stderr, then check the summary against limits (`--max kl_mean=0.01 --min top1_match=0.995`) and
against a baseline run (`--baseline <job id>|latest|<tag> --max-regression kl_mean=10%`). Exit 0 pass, 1 a rule
failed, 2 no verdict (bad arguments, server unreachable, model rejected, job failed). Runs with this package
alone (httpx): nothing of the server is imported."""

from __future__ import annotations

import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from kneeboard_client.client import ApiError, Json, KneeboardClient
from kneeboard_client.errors import CheckError
from kneeboard_client.reports import CheckReport, write_outputs
from kneeboard_client.thresholds import (
    Limit,
    Regression,
    check_limit,
    check_regression,
    output_metrics,
    parse_limit,
    parse_regression,
    skipped_regression,
)

LATEST = "latest"
"""--baseline latest: the newest succeeded fidelity job in the project whose golden model has the same name."""


@dataclass
class CheckSpec:
    """The parsed command line of one check."""

    server: str
    token: str | None
    project: str
    golden: str
    compressed: str
    dataset: str
    golden_name: str | None = None
    compressed_name: str | None = None
    output: str | None = None
    limits: list[Limit] = field(default_factory=list)
    baseline: str | None = None
    regressions: list[Regression] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    """Tags put on this run's fidelity job (e.g. release-1.5), so that a later check can name it as its baseline."""
    params: dict[str, Any] = field(default_factory=dict)
    timeout_s: float = 1800.0

    @classmethod
    def parse(
        cls,
        *,
        max_: list[str],
        min_: list[str],
        max_regression: list[str],
        param: list[str],
        **values: Any,
    ) -> CheckSpec:
        """Validate the rules before anything is uploaded: a typo must not cost a whole fidelity run."""
        limits = [parse_limit(s, "max") for s in max_] + [parse_limit(s, "min") for s in min_]
        regressions = [parse_regression(s) for s in max_regression]
        spec = cls(limits=limits, regressions=regressions, params=_params(param), **values)
        if spec.regressions and not spec.baseline:
            raise CheckError("--max-regression needs --baseline (a fidelity job id, a job tag, or 'latest')")
        if spec.baseline and not spec.regressions:
            raise CheckError("--baseline needs at least one --max-regression METRIC=AMOUNT[%]")
        if not spec.limits and not spec.regressions:
            raise CheckError(
                "nothing to check: give --max / --min limits or --baseline with --max-regression"
            )
        if not spec.server:
            raise CheckError("no server: give --server URL or set $KNEEBOARD_URL")
        return spec


def _params(specs: list[str]) -> dict[str, Any]:
    """--param batch_size=32 --param task=\"classification\": extra fidelity job parameters (JSON values,
    else the text as a string)."""
    params: dict[str, Any] = {}
    for spec in specs:
        key, sep, text = spec.partition("=")
        if not sep or not key:
            raise CheckError(f"--param {spec!r}: expected KEY=VALUE, e.g. --param batch_size=32")
        try:
            params[key] = json.loads(text)
        except ValueError:
            params[key] = text
    return params


class Progress:
    """The job's progress on stderr: a redrawn bar on a terminal, a line per 10 % step in a CI log."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.last: tuple[str, int] | None = None

    def __call__(self, job: Json) -> None:
        fraction = float(job.get("progress") or 0.0)
        status, message = str(job["status"]), str(job.get("progress_message") or "")
        if self.tty:
            filled = int(fraction * 30)
            bar = "#" * filled + "-" * (30 - filled)
            self.stream.write(f"\r[{bar}] {fraction * 100:5.1f}% {status} {message[:40]:<40}")
            if status in ("succeeded", "failed", "cancelled"):
                self.stream.write("\n")
        else:
            step = (status, int(fraction * 10))
            if step != self.last:
                self.stream.write(f"kneeboard check: {status} {fraction * 100:.0f}% {message}\n")
                self.last = step
        self.stream.flush()


def _is_id(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return not Path(value).exists()


def _project(client: KneeboardClient, wanted: str) -> Json:
    """The project by id or name; a name that does not exist yet is created (in the token user's team)."""
    projects = client.projects()
    for project in projects:
        if wanted in (project["id"], project["name"]):
            return project
    if _is_id(wanted):
        raise CheckError(f"no project with id {wanted} (or the token's user may not see it)")
    return client.create_project(wanted, "created by kneeboard check")


def _model(
    client: KneeboardClient, project: Json, ref: str, name: str | None, role: str, log: TextIO
) -> Json:
    if _is_id(ref):
        model = client.model(ref)
    else:
        path = Path(ref)
        if not path.is_file():
            raise CheckError(f"{role} model {ref!r}: no such file (nor a model id)")
        log.write(f"kneeboard check: uploading the {role} model {path}\n")
        try:
            model = client.upload_model(project["id"], path, name=name or path.name)
        except ApiError as exc:
            raise CheckError(f"{role} model {path}: the server rejected it: {exc.message}") from exc
    model = client.wait_model(model["id"])
    if model["status"] != "ready":
        raise CheckError(
            f"{role} model {model['name']!r} ({model['id']}) is {model['status']}: {model.get('error')}"
        )
    return model


def _dataset(client: KneeboardClient, project: Json, ref: str, log: TextIO) -> Json:
    if _is_id(ref):
        return client.dataset(ref)
    path = Path(ref)
    if not path.is_file():
        raise CheckError(f"dataset {ref!r}: no such file (nor a dataset id)")
    log.write(f"kneeboard check: uploading the dataset {path}\n")
    try:
        return client.upload_dataset(project["id"], path, name=path.name)
    except ApiError as exc:
        raise CheckError(f"dataset {path}: the server rejected it: {exc.message}") from exc


def _baseline(client: KneeboardClient, spec: CheckSpec, project: Json, golden: Json) -> str | None:
    """The baseline's job id: a job id; a tag (`--baseline release-1.4`: the newest succeeded fidelity job of
    the project with that tag, an error when there is none); or `latest` (None when there is no earlier run:
    the first run of a pipeline has nothing to regress from)."""
    assert spec.baseline is not None
    if spec.baseline != LATEST:
        if not _is_id(spec.baseline):
            tagged = client.jobs(
                project["id"], kind="fidelity", status="succeeded", limit=1, tag=spec.baseline
            )
            if not tagged:
                raise CheckError(
                    f"--baseline {spec.baseline!r}: no succeeded fidelity job of project {project['name']!r} has "
                    "this tag (tag a run with --tag, or on the dashboard)"
                )
            return str(tagged[0]["id"])
        job = client.job(spec.baseline)
        if job["kind"] != "fidelity" or job["status"] != "succeeded":
            raise CheckError(
                f"--baseline {spec.baseline}: a {job['kind']} job that is {job['status']}, "
                "not a succeeded fidelity job"
            )
        return spec.baseline
    for run in client.fidelity_runs(project["id"]):
        if (run.get("golden") or {}).get("name") == golden["name"]:
            return str(run["job_id"])
    return None


def _run(client: KneeboardClient, spec: CheckSpec, report: CheckReport, log: TextIO) -> None:
    try:
        client.health()
    except httpx.HTTPError as exc:
        raise CheckError(f"cannot reach the Kneeboard server at {spec.server}: {exc}") from exc
    try:
        client.me()
    except ApiError as exc:
        raise CheckError(
            f"the server at {spec.server} refused the token ({exc.message}); "
            "set --token or $KNEEBOARD_API_TOKEN (kneeboard token create)"
        ) from exc
    project = _project(client, spec.project)
    golden = _model(client, project, spec.golden, spec.golden_name, "golden", log)
    compressed = _model(client, project, spec.compressed, spec.compressed_name, "compressed", log)
    dataset = _dataset(client, project, spec.dataset, log)
    report.golden, report.compressed, report.dataset = golden["name"], compressed["name"], dataset["name"]
    # The baseline is chosen before this run exists, so that `latest` is never the run itself.
    baseline_id = _baseline(client, spec, project, golden) if spec.baseline else None
    report.baseline_job_id = baseline_id
    job = client.create_fidelity_job(
        project["id"], golden["id"], compressed["id"], dataset["id"], **spec.params
    )
    if spec.tags:
        client.update_job(job["id"], tags=spec.tags)
    report.job_id, report.report_url = job["id"], client.report_url(job)
    log.write(f"kneeboard check: fidelity job {job['id']}: {report.report_url}\n")
    done = client.wait_job(job["id"], timeout=spec.timeout_s, on_progress=Progress(log))
    if done["status"] != "succeeded":
        raise CheckError(
            f"fidelity job {job['id']} {done['status']}: {done.get('error') or 'no error message'}"
        )
    report.output, metrics = output_metrics(client.fidelity(job["id"])["summary"], spec.output)
    outcomes = [check_limit(metrics, limit) for limit in spec.limits]
    if baseline_id is not None:
        _, before = output_metrics(client.fidelity(baseline_id)["summary"], report.output)
        outcomes += [check_regression(metrics, before, rule) for rule in spec.regressions]
    else:
        why = f"no earlier succeeded fidelity job of golden model {golden['name']!r} in the project"
        outcomes += [skipped_regression(rule, why) for rule in spec.regressions]
    report.outcomes = outcomes


def run_check(
    spec: CheckSpec | None,
    junit: Path | None = None,
    markdown: Path | None = None,
    error: str | None = None,
    log: TextIO = sys.stderr,
    out: TextIO = sys.stdout,
) -> int:
    """Run the check, write the JUnit and Markdown files (also on error), print the verdict; the exit code."""
    started = time.monotonic()
    report = CheckReport(error=error)
    if spec is not None and error is None:
        with KneeboardClient(spec.server, token=spec.token, timeout=300.0) as client:
            try:
                _run(client, spec, report, log)
            except CheckError as exc:
                report.error = str(exc)
            except ApiError as exc:
                report.error = f"the server answered HTTP {exc.status_code}: {exc.message}"
            except (httpx.HTTPError, TimeoutError, OSError) as exc:
                report.error = f"{type(exc).__name__}: {exc}"
    report.duration_s = time.monotonic() - started
    write_outputs(report, junit, markdown)
    for outcome in report.outcomes:
        out.write(
            f"{'SKIP' if outcome.skipped else 'PASS' if outcome.passed else 'FAIL'}  {outcome.message}\n"
        )
    if report.error is not None:
        log.write(f"kneeboard check: error: {report.error}\n")
    if report.report_url:
        out.write(f"report: {report.report_url}\n")
    out.write(f"kneeboard check {report.verdict}\n")
    return report.exit_code
