"""The body of every error response."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class FieldErrorOut(BaseModel):
    """One request field that failed validation."""

    type: str = Field(description="Pydantic's error type, e.g. less_than_equal or uuid_parsing.")
    loc: list[str | int] = Field(description="Where: the location (path, query, body) then the field's path.")
    msg: str
    ctx: dict[str, Any] | None = Field(
        default=None, description="The constraint that failed, e.g. {'le': 500} for an upper bound."
    )


class ErrorOut(BaseModel):
    """Every error response: a stable code and a message that says what went wrong and what to do."""

    error: str = Field(description="Stable code, e.g. not_found, conflict, invalid_request, invalid_upload.")
    detail: str = Field(description="For the user: what went wrong and what to do about it.")
    fields: list[FieldErrorOut] | None = Field(
        default=None, description="invalid_request from request validation: each field at fault."
    )
