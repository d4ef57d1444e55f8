"""The API and the engine name model formats the same way (they cannot import each other)."""

from typing import get_args

from backend.model_formats import ModelFormat as ApiModelFormat
from worker.engine.types import ModelFormat as EngineModelFormat


def test_model_format_names_agree() -> None:
    assert set(get_args(ApiModelFormat)) == set(get_args(EngineModelFormat))
