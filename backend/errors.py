"""One error hierarchy for the API; backend/api/errors.py maps it to HTTP in one place.

Every message is written for the user: it says what went wrong and what to do about it.
"""

from __future__ import annotations


class KneeboardError(Exception):
    """Root of the errors we raise on purpose."""

    status_code = 400
    code = "bad_request"
    headers: dict[str, str] | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(KneeboardError):
    status_code = 404
    code = "not_found"


class Conflict(KneeboardError):
    status_code = 409
    code = "conflict"


class InvalidUpload(KneeboardError):
    """The uploaded file is not what it claims to be, or cannot be accepted."""

    status_code = 422
    code = "invalid_upload"


class InvalidRequest(KneeboardError):
    status_code = 422
    code = "invalid_request"


class UploadTooLarge(KneeboardError):
    status_code = 413
    code = "upload_too_large"


class RequestTooLarge(KneeboardError):
    """A request body (other than an upload) over KNEEBOARD_MAX_BODY_BYTES."""

    status_code = 413
    code = "request_too_large"


class StorageError(KneeboardError):
    status_code = 503
    code = "storage_unavailable"


class QueueUnavailable(KneeboardError):
    status_code = 503
    code = "queue_unavailable"


class Unauthenticated(KneeboardError):
    """No credentials, or ones that are unknown, expired or revoked."""

    status_code = 401
    code = "unauthenticated"
    headers = {"WWW-Authenticate": "Bearer"}  # noqa: RUF012 (read-only)


class TooManyAttempts(KneeboardError):
    """Sign-in attempts of this account or address are throttled; Retry-After says when to try again."""

    status_code = 429
    code = "too_many_attempts"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(retry_after_s)}


class Busy(KneeboardError):
    """A bounded pool (e.g. password hashing) is full: try again after Retry-After."""

    status_code = 503
    code = "busy"

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(retry_after_s)}


class Forbidden(KneeboardError):
    """The caller can see the resource but their role does not allow this change."""

    status_code = 403
    code = "forbidden"
