"""What the generated resource tree (``_resources.py``) is built of: a method of one operation, a group of
methods, the answers they give (a ``Result`` dict with ``.response``, or a ``Download``) and the per-call
options. ``Svc`` (client.py) binds them to itself."""
import re
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Dict, Iterable, Iterator, Mapping, Optional, Union

from ._operations import OPERATIONS
from ._sse import ServerEvent
from ._transport import Answer

from typing import TypedDict

if TYPE_CHECKING:
    from .client import Svc

#: File content for an upload (drive.upload, drive.replace, ...): bytes, text, a file open for reading, or an
#: iterable of byte chunks (a generator), which is streamed and sent once.
Content = Union[bytes, bytearray, str, IO[bytes], IO[str], Iterable[bytes]]


class CallOptions(TypedDict, total=False):
    """Per-call options, a method's first (positional) argument: ``svc.drive.create_folder({"idempotency_key": "k1"}, name="x")``."""

    idempotency_key: str
    max_retries: int
    headers: Mapping[str, str]
    timeout: Optional[float]


@dataclass
class ResponseInfo:
    status: int
    headers: Dict[str, str]
    etag: Optional[str]
    request_id: Optional[str]


class Result(dict):  # type: ignore[type-arg]
    """A JSON object answer (a dict), with ``response``: its status and headers (ETag, request id)."""

    response: ResponseInfo


def response_of(answer: Any) -> Optional[ResponseInfo]:
    """The status and headers (ETag, request id) of a method's JSON object answer; None for anything else.
    The same as ``answer.response``, for code typed with the answer's TypedDict (which has no attributes)."""
    return answer.response if isinstance(answer, Result) else None


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


class Method:
    """A resource method: call it; for lists ``.all()``; for event lists ``.stream()``. Keyword arguments: path,
    query and header parameters and the JSON body's fields, in snake_case (``from_`` for ``from``) or camelCase.

    Each operation's class in ``_resources.py`` declares its own typed call, ``all`` and ``stream`` for type
    checkers; the calls made at run time are these."""

    def __init__(self, client: "Svc", operation: str) -> None:
        self._client = client
        self.operation = operation
        self.__doc__ = "%s %s (%s)" % (OPERATIONS[operation]["method"], OPERATIONS[operation]["path"], operation)

    def _invoke(self, _options: Optional[Mapping[str, Any]] = None, **params: Any) -> Any:
        return self._client.call(self.operation, _options=_options, **params)

    def _all(self, **params: Any) -> Iterator[Any]:
        """Every item across every page (follows nextCursor)."""
        return self._client.paginate(self.operation, **params)

    def _stream(self, max_reconnects: int = 10, **params: Any) -> Iterator[ServerEvent[Any]]:
        """A live stream of server-sent events that reconnects after Last-Event-ID and never yields an event twice."""
        return self._client.stream(self.operation, max_reconnects=max_reconnects, **params)

    if not TYPE_CHECKING:
        __call__ = _invoke
        all = _all
        stream = _stream

    def __repr__(self) -> str:
        return "<svc method %s>" % self.operation


class Resource:
    """A group of methods and groups (``svc.drive``, ``svc.drive.locks``), each under its name and in snake_case."""

    def __init__(self, client: "Svc", tree: Mapping[str, Any], path: str = "") -> None:
        attach(self, client, tree, path)


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def attach(target: Any, client: "Svc", tree: Mapping[str, Any], path: str = "") -> None:
    """Sets the tree's methods and groups on ``target`` (the generated class of each, else Method or Resource),
    by their names and in snake_case (createFolder, create_folder)."""
    from ._resources import GROUP_CLASSES, METHOD_CLASSES  # generated; it imports this module

    for name, node in tree.items():
        if isinstance(node, str):
            value = METHOD_CLASSES.get(node, Method)(client, node)  # type: Any
        else:
            inner = path + "." + name if path else name
            value = GROUP_CLASSES.get(inner, Resource)(client, node, inner)
        setattr(target, name, value)
        setattr(target, _snake(name), value)
