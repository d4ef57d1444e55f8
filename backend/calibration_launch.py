"""A job's calibration samples, checked at launch against the stored rows (issue 33): the split rule of
`backend.calibration_split` on the datasets' sample counts, and a named calibration set's arrays against
the golden model's inputs (its inspection) and the evaluation dataset's arrays. Every problem is an
InvalidRequest (422) whose words say what was expected."""

from __future__ import annotations

from typing import Any

from backend.calibration_split import CalibrationSplit, CalibrationSplitError, plan_split
from backend.db.models import Dataset, Model
from backend.errors import InvalidRequest

ANNOTATION_ARRAYS = ("labels", "targets", "gt_boxes", "gt_labels")
"""Arrays that never feed a model input (worker/engine/fidelity/binding.py `bind_inputs` skips them)."""


def launch_split(
    golden: Model,
    evaluation: Dataset,
    calibration: Dataset | None,
    max_samples: int,
    calibration_samples: int | None,
) -> CalibrationSplit:
    """The split a job will use, or InvalidRequest naming the field and what was expected."""
    try:
        split = plan_split(
            evaluation_dataset_id=str(evaluation.id),
            evaluation_samples=evaluation.n_samples,
            max_samples=max_samples,
            calibration_dataset_id=None if calibration is None else str(calibration.id),
            calibration_dataset_samples=None if calibration is None else calibration.n_samples,
            calibration_samples=calibration_samples,
            same_content=calibration is not None
            and calibration.artifact_sha256 == evaluation.artifact_sha256,
        )
    except CalibrationSplitError as exc:
        field = "calibration_dataset_id" if calibration is not None else "dataset_id"
        raise InvalidRequest(f"params.{field}: {exc}") from exc
    if calibration is not None:
        problems = input_problems(golden, evaluation, calibration)
        if problems:
            raise InvalidRequest(
                f"params.calibration_dataset_id: the calibration dataset {calibration.name!r} does not fit the "
                f"golden model {golden.name!r}: " + "; ".join(problems)
            )
    return split


def _shape(info: Any) -> list[Any] | None:
    shape = info.get("shape") if isinstance(info, dict) else None
    return list(shape) if isinstance(shape, list) else None


def _fits(expected: list[Any], given: list[Any]) -> bool:
    """Same rank, and every fixed size after the batch dimension equal (a named or null one is free)."""
    return len(expected) == len(given) and all(
        not isinstance(e, int) or isinstance(e, bool) or e == g
        for e, g in zip(expected[1:], given[1:], strict=True)
    )


def _fmt(shape: list[Any]) -> str:
    return "(" + ", ".join("?" if not isinstance(d, int) else str(d) for d in shape) + ")"


def input_problems(golden: Model, evaluation: Dataset, calibration: Dataset) -> list[str]:
    """Why the calibration set's arrays cannot feed the golden model: by the model's inspected inputs
    (names, rank, fixed sizes; as bind_inputs binds them), else, before an inspection, by the evaluation
    dataset's arrays (the same names with the same per-sample shapes)."""
    arrays = {k: v for k, v in (calibration.arrays or {}).items() if k not in ANNOTATION_ARRAYS}
    inputs = (golden.inspection or {}).get("inputs")
    expected: dict[str, list[Any]] = {}
    if isinstance(inputs, list) and inputs:
        expected = {str(i.get("name")): list(i.get("shape") or []) for i in inputs if isinstance(i, dict)}
    else:
        for name, info in (evaluation.arrays or {}).items():
            shape = _shape(info)
            if name not in ANNOTATION_ARRAYS and shape is not None:
                expected[name] = [None, *shape[1:]]
    if not expected:
        return []
    if all(name in arrays for name in expected):
        chosen = {name: arrays[name] for name in expected}
    elif len(expected) == 1 and len(arrays) == 1:
        chosen = {next(iter(expected)): next(iter(arrays.values()))}
    else:
        return [
            f"the model expects inputs {sorted(expected)} but the calibration dataset has arrays {sorted(arrays)}; "
            "name its arrays after the model inputs"
        ]
    problems = []
    for name, info in chosen.items():
        given = _shape(info)
        want = expected[name]
        if given is None or not want:
            continue
        if not _fits(want, given):
            problems.append(
                f"input '{name}' expects shape {_fmt(want)} but the calibration dataset gives {_fmt(given)}"
            )
    return problems
