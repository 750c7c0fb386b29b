"""The errors a call can end with.

An answer of the API with a 4xx or 5xx status is an ``SvcError`` (or the subclass for its status)
carrying the contract's error body: ``status``, ``code``, ``message``, ``request_id``. A request that
got no answer is an ``SvcConnectionError``; a client without the configuration it needs is an
``SvcConfigError``.
"""
import email.utils
import time
from typing import Any, Dict, Mapping, Optional


class SvcConfigError(Exception):
    """The client lacks configuration (no API key): raised at the first call that needs it."""


class SvcError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        request_id: Optional[str] = None,
        operation: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.operation = operation
        self.headers: Dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}

    def __repr__(self) -> str:
        return "%s(status=%d, code=%r, message=%r, request_id=%r)" % (
            type(self).__name__, self.status, self.code, self.message, self.request_id)


class SvcInvalidRequestError(SvcError):
    """400, 413, 415, 416, 422: the input was refused."""


class SvcAuthenticationError(SvcError):
    """401: no valid credential."""


class SvcPermissionError(SvcError):
    """403: the principal may not do this (e.g. ``human_principal_required``)."""


class SvcNotFoundError(SvcError):
    """404: no such resource (also for another account's)."""


class SvcConflictError(SvcError):
    """409: the state does not allow it."""


class SvcPreconditionFailedError(SvcError):
    """412: If-Match / If-None-Match did not hold; ``etag`` is the current version's ETag."""

    @property
    def etag(self) -> Optional[str]:
        return self.headers.get("etag")


class SvcPreconditionRequiredError(SvcError):
    """428: the operation needs a precondition (If-Match)."""


class SvcRateLimitError(SvcError):
    """429: too many requests."""

    @property
    def retry_after(self) -> Optional[float]:
        return retry_after_seconds(self.headers)


class SvcServerError(SvcError):
    """5xx: the server failed (after the retries, when the call could be retried)."""


class SvcConnectionError(SvcError):
    """No answer: the network failed or the call timed out (after the retries)."""


_BY_STATUS = {
    400: SvcInvalidRequestError,
    401: SvcAuthenticationError,
    403: SvcPermissionError,
    404: SvcNotFoundError,
    409: SvcConflictError,
    412: SvcPreconditionFailedError,
    413: SvcInvalidRequestError,
    415: SvcInvalidRequestError,
    416: SvcInvalidRequestError,
    422: SvcInvalidRequestError,
    428: SvcPreconditionRequiredError,
    429: SvcRateLimitError,
}


def error_from_answer(status: int, body: Any, headers: Mapping[str, str], operation: Optional[str] = None) -> SvcError:
    """The typed error for an answer with ``status`` and (when it is the contract's) error body ``body``."""
    err = body.get("error") if isinstance(body, dict) else None
    err = err if isinstance(err, dict) else {}
    kind = _BY_STATUS.get(status) or (SvcServerError if status >= 500 else SvcError)
    lowered = {k.lower(): v for k, v in headers.items()}
    code = err.get("code")
    message = err.get("message")
    return kind(
        status,
        code if isinstance(code, str) else "http_%d" % status,
        message if isinstance(message, str) else "The server answered %d." % status,
        err.get("requestId") if isinstance(err.get("requestId"), str) else lowered.get("x-request-id"),
        operation,
        lowered,
    )


def retry_after_seconds(headers: Mapping[str, str]) -> Optional[float]:
    """``Retry-After`` in seconds (seconds or an HTTP date), if the answer has one."""
    value = {k.lower(): v for k, v in headers.items()}.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - time.time())
