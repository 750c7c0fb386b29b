"""svc_sdk: the svc API for Python (standard library only).

    from svc_sdk import Svc
    svc = Svc()                      # SVC_API_KEY, SVC_BASE_URL, SVC_HOST_CREDENTIAL
    thread = svc.threads.create(message="hello")
    for event in svc.threads.events.stream(id=thread["id"]):
        print(event.event, event.data)
"""
from ._operations import OPERATIONS, RESOURCES
from ._sse import ServerEvent, parse_events
from ._transport import DEFAULT_BASE_URL, VERSION
from .client import Download, Method, Resource, ResponseInfo, Result, Svc
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
    "ServerEvent", "parse_events", "SvcError", "SvcConfigError", "SvcConnectionError", "SvcInvalidRequestError",
    "SvcAuthenticationError", "SvcPermissionError", "SvcNotFoundError", "SvcConflictError", "SvcPreconditionFailedError",
    "SvcPreconditionRequiredError", "SvcRateLimitError", "SvcServerError",
]
