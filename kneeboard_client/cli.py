"""The `check` command line, shared by `kneeboard check` (the server package's CLI, backend/cli.py) and the
client-only install's `kneeboard` / `kneeboard-check` scripts (`pip install ./kneeboard_client`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kneeboard_client.check import LATEST, CheckSpec, run_check
from kneeboard_client.errors import CheckError

EPILOG = """\
metrics: the keys of the summary's output (kl_mean_nats, js_mean_nats, top1_match, topk_agreement,
cosine_mean, mse, sqnr_db, ...), short names (kl_mean for kl_mean_nats) and the label metrics
(top1_accuracy_drop_pp, ece_shift). exit code: 0 passed, 1 a check failed, 2 error (no verdict).
"""


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server",
        default=os.environ.get("KNEEBOARD_URL"),
        help="the Kneeboard URL (default: $KNEEBOARD_URL)",
    )
    parser.add_argument("--token", default=None, help="a personal API token (default: $KNEEBOARD_API_TOKEN)")
    parser.add_argument("--project", required=True, help="project name or id (a new name is created)")
    parser.add_argument("--golden", required=True, help="golden model: a file to upload, or a model id")
    parser.add_argument(
        "--compressed", required=True, help="compressed model: a file to upload, or a model id"
    )
    parser.add_argument("--dataset", required=True, help="dataset: a file to upload, or a dataset id")
    parser.add_argument("--golden-name", help="name of the uploaded golden model (default: its file name)")
    parser.add_argument(
        "--compressed-name", help="name of the uploaded compressed model (default: its file name)"
    )
    parser.add_argument("--output", help="the model output to check (default: the primary output)")
    parser.add_argument(
        "--max", dest="max_", action="append", default=[], metavar="METRIC=VALUE",
        help="fail when the metric is above VALUE (repeatable), e.g. --max kl_mean=0.01",
    )  # fmt: skip
    parser.add_argument(
        "--min", dest="min_", action="append", default=[], metavar="METRIC=VALUE",
        help="fail when the metric is below VALUE (repeatable), e.g. --min top1_match=0.995",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", metavar="JOB_ID|TAG|latest",
        help=f"compare with this succeeded fidelity job; the newest one with this tag; or '{LATEST}': the newest "
        "one whose golden model has the same name in the project",
    )  # fmt: skip
    parser.add_argument(
        "--tag", dest="tags", action="append", default=[], metavar="TAG",
        help="tag this run's fidelity job (repeatable), e.g. --tag release-1.5, for a later --baseline release-1.5",
    )  # fmt: skip
    parser.add_argument(
        "--max-regression", action="append", default=[], metavar="METRIC=AMOUNT[%]",
        help="fail when the metric is worse than the baseline's by more than AMOUNT (or AMOUNT %% of it)",
    )  # fmt: skip
    parser.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE",
        help="an extra fidelity job parameter (JSON value), e.g. --param batch_size=32",
    )  # fmt: skip
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for the job (1800)")
    parser.add_argument("--junit", type=Path, help="write a JUnit XML file here")
    parser.add_argument("--markdown", type=Path, help="write a Markdown summary here")


def check_from_args(args: argparse.Namespace) -> int:
    """Run the check from parsed arguments; bad rules are reported (exit 2) in the JUnit / Markdown too."""
    try:
        spec = CheckSpec.parse(
            max_=args.max_,
            min_=args.min_,
            max_regression=args.max_regression,
            param=args.param,
            server=args.server or "",
            token=args.token or os.environ.get("KNEEBOARD_API_TOKEN"),
            project=args.project,
            golden=args.golden,
            compressed=args.compressed,
            dataset=args.dataset,
            golden_name=args.golden_name,
            compressed_name=args.compressed_name,
            output=args.output,
            baseline=args.baseline,
            tags=args.tags,
            timeout_s=args.timeout,
        )
    except CheckError as exc:
        return run_check(None, args.junit, args.markdown, error=str(exc))
    return run_check(spec, args.junit, args.markdown)


def check_main(argv: Sequence[str] | None = None) -> None:
    """`kneeboard-check ...`."""
    parser = argparse.ArgumentParser(prog="kneeboard-check", description=__doc__, epilog=EPILOG)
    add_check_arguments(parser)
    sys.exit(check_from_args(parser.parse_args(argv)))


def main(argv: Sequence[str] | None = None) -> None:
    """`kneeboard` of the client-only install: `check` here; the server's commands (up, api, worker...) come
    with the server package, whose own `kneeboard` has `check` too."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["check"]:
        parser = argparse.ArgumentParser(prog="kneeboard check", epilog=EPILOG)
        add_check_arguments(parser)
        sys.exit(check_from_args(parser.parse_args(argv[1:])))
    server_main = _server_main()
    if server_main is None:
        sys.exit(
            "kneeboard: this is the client-only install; its one command is `kneeboard check` "
            "(the server's commands need the kneeboard server package)"
        )
    server_main(argv)


def _server_main() -> Callable[[list[str]], None] | None:
    """The server package's `kneeboard` when it is installed: another distribution's `kneeboard` console
    script. Found through the installed entry points rather than by importing the server's module, so the
    client package names nothing of the server (and the two packages do not import each other)."""
    from importlib.metadata import entry_points

    for entry in entry_points(group="console_scripts", name="kneeboard"):
        if entry.value.replace(" ", "") == f"{__name__}:main":
            continue
        try:
            loaded: Callable[[list[str]], None] = entry.load()
        except ImportError:
            continue
        return loaded
    return None
