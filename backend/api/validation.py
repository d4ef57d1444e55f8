"""Input that no operation can accept, refused up front for every operation under /api/v1 (a dependency of
its router): a NUL character in a query parameter or anywhere in a JSON body, which Postgres text cannot
hold, and NaN or ±Infinity in a JSON body, which Python's parser accepts (as does ``1e999``, read as
infinity) but which are not JSON and which Postgres's json type refuses. Each is a 422 naming the field.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import Request

from backend.errors import InvalidRequest

NUL = "\x00"


def _where(path: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path) or "body"


def unstorable_json(value: Any, root: tuple[str | int, ...] = ()) -> str | None:
    """Why a parsed JSON document cannot be accepted (the first problem, naming its field under ``root``),
    or None. Walks the document with an explicit stack: it may be nested as deeply as the parser allows.
    """
    stack: list[tuple[tuple[str | int, ...], Any]] = [(root, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return f"{_where(path)}: {item} is not a finite number (JSON has no NaN or Infinity)"
        if isinstance(item, str) and NUL in item:
            return f"{_where(path)}: must not contain NUL (\\x00) characters"
        if isinstance(item, dict):
            for key, child in item.items():
                if NUL in key:
                    return f"{_where(path)}: a key must not contain NUL (\\x00) characters"
                stack.append(((*path, key), child))
        elif isinstance(item, list):
            stack.extend(((*path, i), child) for i, child in enumerate(item))
    return None


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


async def refuse_unstorable_input(request: Request) -> None:
    for name, value in request.query_params.multi_items():
        if NUL in name or NUL in value:
            raise InvalidRequest(f"{name.replace(NUL, '')}: must not contain NUL (\\x00) characters")
    # Only methods with a body (which the upload limit bounds) are read: a GET's body is never looked at.
    if request.method in ("POST", "PUT", "PATCH") and _is_json(request.headers.get("content-type")):
        try:
            body = await request.json()  # FastAPI has parsed it already; this reads its cached copy
        except (ValueError, RecursionError):
            return  # not JSON at all: FastAPI reports that itself
        problem = unstorable_json(body)
        if problem:
            raise InvalidRequest(problem)
