"""The client: ``Svc()`` reads SVC_API_KEY / SVC_BASE_URL / SVC_HOST_CREDENTIAL (arguments override
them) and offers every public operation as a method of its resource tree, generated from the route
table: ``svc.threads.create(title=...)``, ``svc.drive.list(parent_id=...)``, ``svc.drive.list.all()``,
``svc.threads.events.stream(id=...)``. Operations that change authority are not part of it."""
import json
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

from ._base import CallOptions, Content, Download, Method, Resource, ResponseInfo, Result, attach, response_of
from ._operations import OPERATIONS, RESOURCES
from ._resources import MeApiKeys, SvcResources
from ._sse import ServerEvent, stream_events
from ._transport import Answer, Config, prepare, resolve_config, send


def _info(answer: Answer) -> ResponseInfo:
    return ResponseInfo(answer.status, answer.headers, answer.headers.get("etag"), answer.headers.get("x-request-id"))


class Svc(SvcResources):
    """The svc API. Keyword arguments of a method: path, query and header parameters (``if_match``)
    and the JSON body's fields, in snake_case or camelCase; ``content=`` for file bytes. The methods are typed
    (``_resources.py``, ``types.py``): mypy or pyright check a call's arguments and read its answer's keys."""

    keys: MeApiKeys

    def __init__(
        self,
        api_key: Optional[str] = None,
        base_url: Optional[str] = None,
        host_credential: Optional[str] = None,
        account_id: Optional[str] = None,
        max_retries: int = 3,
        retry_base: float = 0.25,
        timeout: Optional[float] = 60.0,
        env: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.config: Config = resolve_config(
            api_key, base_url, host_credential, env,
            account_id=account_id, max_retries=max_retries, retry_base=retry_base, timeout=timeout,
        )
        attach(self, self, RESOURCES)
        # The caller's API keys (/me/api-keys): svc.keys.create, list, revoke.
        self.keys = self.meApiKeys

    if not TYPE_CHECKING:  # a type checker knows every resource; an unknown one is its error, not Any

        def __getattr__(self, name: str) -> Any:
            raise AttributeError("svc has no resource %r (operations that change authority are not offered)" % name)

    def call(self, operation: str, _options: Optional[Mapping[str, Any]] = None, **params: Any) -> Any:
        """Calls ``operation`` (a route id); the answer's JSON (a ``Result`` for an object), or a Download.
        ``_options``: ``idempotency_key``, ``max_retries``, ``headers``, ``timeout``."""
        prepared = prepare(self.config, operation, params)
        answer = send(self.config, operation, prepared, **dict(_options or {}))
        if OPERATIONS[operation]["answer"] == "bytes":
            return Download(answer)
        text = answer.read()
        value = json.loads(text.decode("utf-8")) if text else None
        if isinstance(value, dict):
            value = Result(value)
            value.response = _info(answer)
        return value

    def paginate(self, operation: str, **params: Any) -> Iterator[Any]:
        """Every item of a list operation across its pages, following ``nextCursor`` (or ``nextAfter``)."""
        paged = OPERATIONS[operation]["paged"]
        if not paged:
            raise ValueError("svc: %s is not a list" % operation)
        page = dict(params)
        while True:
            answer = self.call(operation, **page)
            for item in answer.get(paged["items"]) or []:
                yield item
            nxt = answer.get(paged["next"])
            if nxt is None:
                return
            page[paged["param"]] = nxt

    def stream(self, operation: str, max_reconnects: int = 10, **params: Any) -> Iterator[ServerEvent[Any]]:
        """The live server-sent events of an operation that has them (threads.events), resumed across drops."""
        if not OPERATIONS[operation]["events"]:
            raise ValueError("svc: %s has no event stream" % operation)
        return stream_events(self.config, operation, dict(params), max_reconnects)


__all__ = ["Svc", "Download", "Result", "ResponseInfo", "Method", "Resource", "ServerEvent", "CallOptions", "Content", "response_of"]
