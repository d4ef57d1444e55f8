"""The API and the engine name model formats the same way (they cannot import each other)."""

from typing import get_args

from backend.model_formats import ModelFormat as ApiModelFormat
from worker.engine.types import ModelFormat as EngineModelFormat


def test_model_format_names_agree() -> None:
    assert set(get_args(ApiModelFormat)) == set(get_args(EngineModelFormat))


def test_the_tasks_a_fidelity_job_may_name_are_the_engines() -> None:
    # The API's task Literal against the engine's: its per-output tasks and every registered task adapter
    # (a task registered but not in the Literal could never be asked for; the other way, a job would fail).
    from backend.contracts import FidelityJobParams
    from worker.engine.fidelity.params import OUTPUT_TASKS
    from worker.engine.tasks.interface import adapter_tasks

    api = set(get_args(FidelityJobParams.model_fields["task"].annotation))
    assert "detection" in api
    assert api == set(OUTPUT_TASKS) | set(adapter_tasks())
