"""The one place where errors become HTTP responses: {"error": code, "detail": message}.

Our own errors (backend/errors.py), request validation and the framework's HTTP errors (an unknown path, a
wrong method, a body that cannot be parsed) all answer in this one shape, which the OpenAPI spec documents
per operation through ``error_responses``.
"""

from __future__ import annotations

import logging
import math
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from backend.api.schemas import ErrorOut
from backend.errors import InvalidRequest, KneeboardError, NotFound, UploadTooLarge

log = logging.getLogger(__name__)

# Codes of the framework's own HTTP errors, where one of ours means the same.
_FRAMEWORK_CODES = {
    KneeboardError.status_code: KneeboardError.code,
    NotFound.status_code: NotFound.code,
    UploadTooLarge.status_code: UploadTooLarge.code,
    InvalidRequest.status_code: InvalidRequest.code,
}


def _framework_code(status: int) -> str:
    if status in _FRAMEWORK_CODES:
        return _FRAMEWORK_CODES[status]
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_")
    except ValueError:
        return f"http_{status}"


def error_responses(*errors: type[KneeboardError]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the errors an operation raises (request validation: InvalidRequest)."""
    codes: dict[int, list[str]] = {}
    for error in errors:
        codes.setdefault(error.status_code, []).append(error.code)
    return {
        status: {
            "model": ErrorOut,
            "description": f"{HTTPStatus(status).phrase}: error is {' or '.join(sorted(set(names)))}.",
        }
        for status, names in sorted(codes.items())
    }


def _describe_validation(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":  # its loc is (body, character offset)
            reason = (err.get("ctx") or {}).get("error", "")
            offset = err.get("loc", ("body", "?"))[-1]
            parts.append(f"body: not valid JSON at character {offset} ({reason})")
            continue
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path"))
        parts.append(f"{loc or 'request'}: {err.get('msg')}")
    return "; ".join(parts)


def _json_scalar(value: object) -> object:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return str(value)


def _field_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """The validation errors without the offending input: it can be large, binary, NaN or infinite, none
    of which belongs in (or survives) a JSON error response."""
    fields = []
    for err in exc.errors():
        ctx = err.get("ctx")
        fields.append(
            {
                "type": str(err.get("type", "")),
                "loc": [p if isinstance(p, int) else str(p) for p in err.get("loc", ())],
                "msg": str(err.get("msg", "")),
                "ctx": {str(k): _json_scalar(v) for k, v in ctx.items()} if isinstance(ctx, dict) else None,
            }
        )
    return fields


def _allowed_methods(request: Request) -> set[str]:
    """Every method some route serves at this path. Starlette's 405 lists only the methods of the first
    route that matched the path, so GET and POST on /projects (two routes) would each claim to be the only
    one. Asked route by route (``matches`` is the public API; routers may nest)."""
    allowed = set()
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            allowed.add(method)
    return allowed


# FastAPI's detail for a request body it could not decode (fastapi/routing.py).
FASTAPI_BODY_PARSE_ERROR = "There was an error parsing the body"


def _unparsable_body(cause: BaseException | None) -> str:
    """What is wrong with a body FastAPI could not decode (it chains the parser's own error)."""
    if isinstance(cause, RecursionError):  # json.loads gives up near Python's recursion limit
        return "the request body is JSON nested too deeply (no operation takes more than a few levels)"
    return "the request body is not valid UTF-8 JSON"


def error_response(exc: KneeboardError) -> JSONResponse:
    """One of our errors as its HTTP response (also answered by middleware, before any route runs)."""
    return JSONResponse(
        status_code=exc.status_code,
        content={"error": exc.code, "detail": exc.message},
        headers=exc.headers,
    )


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(KneeboardError)
    async def _kneeboard_error(_request: Request, exc: KneeboardError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(
            status_code=InvalidRequest.status_code,
            content={
                "error": InvalidRequest.code,
                "detail": _describe_validation(exc),
                "fields": _field_errors(exc),
            },
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code in (204, 304):  # no body allowed
            return Response(status_code=exc.status_code, headers=exc.headers)
        if exc.status_code == 400 and exc.detail == FASTAPI_BODY_PARSE_ERROR:
            # FastAPI answers a body that is not even text (bytes that are not UTF-8) with this bare 400, but a
            # body that is not JSON with a 422: both are the same mistake, so both are InvalidRequest (the fuzz
            # test found the 400 on PATCH routes, where no 400 is documented).
            return JSONResponse(
                status_code=InvalidRequest.status_code,
                content={"error": InvalidRequest.code, "detail": _unparsable_body(exc.__cause__)},
            )
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(sorted(_allowed_methods(request)))
        return JSONResponse(
            status_code=exc.status_code,
            content={"error": _framework_code(exc.status_code), "detail": str(exc.detail)},
            headers=headers,
        )
