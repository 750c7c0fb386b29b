"""svc_sdk: the svc API for Python (standard library only).

    from svc_sdk import Svc
    svc = Svc()                      # SVC_API_KEY, SVC_BASE_URL, SVC_HOST_CREDENTIAL
    thread = svc.threads.create(message="hello")
    for event in svc.threads.events.stream(id=thread["id"]):
        print(event.event, event.data)

Every method is typed (``svc_sdk.types``: a TypedDict per request body and answer): ``mypy --strict`` or
pyright check the keyword arguments of a call and the keys read from its answer.
"""
from ._operations import OPERATIONS, RESOURCES
from ._sse import ServerEvent, parse_events
from ._transport import DEFAULT_BASE_URL, VERSION
from . import types
from .client import CallOptions, Content, Download, Method, Resource, ResponseInfo, Result, Svc, response_of
from .errors import (
    SvcAuthenticationError,
    SvcConfigError,
    SvcConflictError,
    SvcConnectionError,
    SvcError,
    SvcInvalidRequestError,
    SvcNotFoundError,
    SvcPermissionError,
    SvcPreconditionFailedError,
    SvcPreconditionRequiredError,
    SvcRateLimitError,
    SvcServerError,
)

__version__ = VERSION
__all__ = [
    "DEFAULT_BASE_URL", "OPERATIONS", "RESOURCES", "Svc", "Download", "Method", "Resource", "ResponseInfo", "Result",
    "response_of", "CallOptions", "Content", "types",
    "ServerEvent", "parse_events", "SvcError", "SvcConfigError", "SvcConnectionError", "SvcInvalidRequestError",
    "SvcAuthenticationError", "SvcPermissionError", "SvcNotFoundError", "SvcConflictError", "SvcPreconditionFailedError",
    "SvcPreconditionRequiredError", "SvcRateLimitError", "SvcServerError",
]
