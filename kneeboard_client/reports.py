"""The two files `kneeboard check` writes for CI: JUnit XML (one test case per rule, which every CI system
shows as test results) and a Markdown summary (for a pull-request comment or $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kneeboard_client.thresholds import Outcome


@dataclass
class CheckReport:
    """What a check found: its rules' outcomes, or the error that kept it from a verdict."""

    outcomes: list[Outcome] = field(default_factory=list)
    error: str | None = None
    report_url: str | None = None
    job_id: str | None = None
    baseline_job_id: str | None = None
    golden: str | None = None
    compressed: str | None = None
    dataset: str | None = None
    output: str | None = None
    duration_s: float = 0.0

    @property
    def failures(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.passed]

    @property
    def exit_code(self) -> int:
        """0 pass, 1 a rule failed, 2 no verdict (error)."""
        if self.error is not None:
            return 2
        return 1 if self.failures else 0

    @property
    def verdict(self) -> str:
        return ("passed", "failed", "error")[self.exit_code]


SUITE = "kneeboard check"


def junit_xml(report: CheckReport) -> str:
    """<testsuites><testsuite> with a <testcase> per rule (<failure> when it failed), or a single test case
    with an <error> when the check could not run."""
    cases: Sequence[Outcome] = report.outcomes
    suites = ET.Element("testsuites", name=SUITE)
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=SUITE,
        tests=str(max(len(cases), 1) if report.error else len(cases)),
        failures=str(0 if report.error else len(report.failures)),
        errors=str(1 if report.error else 0),
        skipped=str(sum(o.skipped for o in cases)),
        time=f"{report.duration_s:.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("job_id", report.job_id),
        ("baseline_job_id", report.baseline_job_id),
        ("report_url", report.report_url),
        ("golden", report.golden),
        ("compressed", report.compressed),
        ("dataset", report.dataset),
        ("output", report.output),
    ):
        if value:
            ET.SubElement(properties, "property", name=name, value=value)
    if report.error is not None:
        case = ET.SubElement(
            suite, "testcase", classname="kneeboard.fidelity", name="run the fidelity check", time="0"
        )
        ET.SubElement(case, "error", message=report.error, type="KneeboardCheckError").text = report.error
    else:
        for outcome in cases:
            case = ET.SubElement(
                suite, "testcase", classname="kneeboard.fidelity", name=outcome.name, time="0"
            )
            if outcome.skipped:
                ET.SubElement(case, "skipped", message=outcome.message)
            elif not outcome.passed:
                ET.SubElement(case, "failure", message=outcome.message, type="FidelityRegression").text = (
                    outcome.message + (f"\nreport: {report.report_url}" if report.report_url else "")
                )
            else:
                ET.SubElement(case, "system-out").text = outcome.message
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.6g}"


def markdown(report: CheckReport) -> str:
    """A heading with the verdict, what was compared, a table of the rules and the link to the report."""
    icon = {"passed": "✅", "failed": "❌", "error": "⚠️"}[report.verdict]
    lines = [f"## {icon} Kneeboard fidelity check {report.verdict}", ""]
    if report.error is not None:
        lines += [f"The check could not run: {report.error}", ""]
    compared = [
        f"**{label}**: {_cell(value)}"
        for label, value in (
            ("Golden", report.golden),
            ("Compressed", report.compressed),
            ("Dataset", report.dataset),
            ("Output", report.output),
        )
        if value
    ]
    if compared:
        lines += [" · ".join(compared), ""]
    if report.baseline_job_id:
        lines += [f"Baseline: fidelity job `{report.baseline_job_id}`", ""]
    if report.outcomes:
        failures = report.failures
        checked = [o for o in report.outcomes if not o.skipped]
        summary = f"{len(checked) - len(failures)} of {len(checked)} checks passed."
        if len(checked) < len(report.outcomes):
            summary += f" {len(report.outcomes) - len(checked)} skipped."
        lines += [summary, ""]
        lines += ["| Check | Value | Baseline | Result |", "|---|---|---|---|"]
        for o in report.outcomes:
            result = (
                f"skipped: {_cell(o.message)}"
                if o.skipped
                else "pass"
                if o.passed
                else f"**FAIL**: {_cell(o.message)}"
            )
            lines.append(f"| `{_cell(o.name)}` | {_num(o.value)} | {_num(o.baseline)} | {result} |")
        lines.append("")
    if report.report_url:
        lines += [f"[Full report on Kneeboard]({report.report_url})", ""]
    return "\n".join(lines)


def write_outputs(report: CheckReport, junit: Path | None, markdown_path: Path | None) -> None:
    for path, text in ((junit, junit_xml(report)), (markdown_path, markdown(report))):
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
