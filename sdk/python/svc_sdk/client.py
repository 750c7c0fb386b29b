"""The client: ``Svc()`` reads SVC_API_KEY / SVC_BASE_URL / SVC_HOST_CREDENTIAL (arguments override
them) and offers every public operation as a method of its resource tree, generated from the route
table: ``svc.threads.create(title=...)``, ``svc.drive.list(parent_id=...)``, ``svc.drive.list.all()``,
``svc.threads.events.stream(id=...)``. Operations that change authority are not part of it."""
import json
import re
from dataclasses import dataclass
from typing import Any, BinaryIO, Dict, Iterator, Mapping, Optional

from ._operations import OPERATIONS, RESOURCES
from ._sse import ServerEvent, stream_events
from ._transport import Answer, Config, prepare, resolve_config, send


@dataclass
class ResponseInfo:
    status: int
    headers: Dict[str, str]
    etag: Optional[str]
    request_id: Optional[str]


class Result(dict):  # type: ignore[type-arg]
    """A JSON object answer (a dict), with ``response``: its status and headers (ETag, request id)."""

    response: ResponseInfo


class Download:
    """A file's content as the API answered it (drive.read): read it once, by ``read()``, ``iter_bytes()`` or ``save()``."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        h = answer.headers
        self.status = answer.status
        self.not_modified = answer.status == 304
        self.etag = h.get("etag")
        self.content_type = h.get("content-type")
        self.content_length = int(h["content-length"]) if "content-length" in h else None
        self.content_range = h.get("content-range")

    def iter_bytes(self, chunk_size: int = 64 * 1024) -> Iterator[bytes]:
        try:
            while True:
                chunk = self._answer.response.read(chunk_size)
                if not chunk:
                    return
                yield chunk
        finally:
            self._answer.close()

    def read(self) -> bytes:
        return b"".join(self.iter_bytes())

    def save(self, target: BinaryIO) -> int:
        """Writes the content into ``target`` (a binary file); the bytes written."""
        n = 0
        for chunk in self.iter_bytes():
            target.write(chunk)
            n += len(chunk)
        return n

    def close(self) -> None:
        self._answer.close()


def _info(answer: Answer) -> ResponseInfo:
    return ResponseInfo(answer.status, answer.headers, answer.headers.get("etag"), answer.headers.get("x-request-id"))


class Method:
    """A resource method: call it; for lists ``.all()``; for event lists ``.stream()``."""

    def __init__(self, client: "Svc", operation: str) -> None:
        self._client = client
        self.operation = operation
        self.__doc__ = "%s %s (%s)" % (OPERATIONS[operation]["method"], OPERATIONS[operation]["path"], operation)

    def __call__(self, _options: Optional[Mapping[str, Any]] = None, **params: Any) -> Any:
        return self._client.call(self.operation, _options=_options, **params)

    def all(self, **params: Any) -> Iterator[Any]:
        """Every item across every page (follows nextCursor)."""
        return self._client.paginate(self.operation, **params)

    def stream(self, max_reconnects: int = 10, **params: Any) -> Iterator[ServerEvent]:
        """A live stream of server-sent events that reconnects after Last-Event-ID and never yields an event twice."""
        return self._client.stream(self.operation, max_reconnects=max_reconnects, **params)

    def __repr__(self) -> str:
        return "<svc method %s>" % self.operation


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _attach(target: Any, client: "Svc", tree: Mapping[str, Any]) -> None:
    """Sets the tree's methods and groups on ``target``, by their names and in snake_case (createFolder, create_folder)."""
    for name, node in tree.items():
        value = Method(client, node) if isinstance(node, str) else Resource(client, node)
        setattr(target, name, value)
        setattr(target, _snake(name), value)


class Resource:
    def __init__(self, client: "Svc", tree: Mapping[str, Any]) -> None:
        _attach(self, client, tree)


class Svc:
    """The svc API. Keyword arguments of a method: path, query and header parameters (``if_match``)
    and the JSON body's fields, in snake_case or camelCase; ``content=`` for file bytes."""

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
        _attach(self, self, RESOURCES)
        # The caller's API keys (/me/api-keys): svc.keys.create, list, revoke.
        self.keys = getattr(self, "meApiKeys")

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

    def stream(self, operation: str, max_reconnects: int = 10, **params: Any) -> Iterator[ServerEvent]:
        """The live server-sent events of an operation that has them (threads.events), resumed across drops."""
        if not OPERATIONS[operation]["events"]:
            raise ValueError("svc: %s has no event stream" % operation)
        return stream_events(self.config, operation, dict(params), max_reconnects)


__all__ = ["Svc", "Download", "Result", "ResponseInfo", "Method", "Resource", "ServerEvent"]
