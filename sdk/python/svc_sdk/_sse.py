"""Server-sent events: a parser over an HTTP response, and a stream that survives dropped connections.

Each persisted event carries its seq as ``id``; after a drop the stream reconnects with
``Last-Event-ID`` (and ``after``) set to the last id it yielded and skips any event at or below it,
so no event is yielded twice and none is lost. Live-only events (text deltas) have no id."""
import http.client
import json
import time
from dataclasses import dataclass
from typing import Any, Dict, Generic, Iterator, List, Optional, TypeVar

from ._transport import Config, backoff, prepare, send
from .errors import SvcError, error_from_answer


T = TypeVar("T")


@dataclass
class ServerEvent(Generic[T]):
    """One server-sent event: ``id`` (the event's seq; None for a live delta), its type, its data (typed by the
    stream: a thread's events carry a ThreadEvent; a live delta or an error event carries other JSON)."""

    id: Optional[str]
    event: Optional[str]
    data: T


def parse_events(response: http.client.HTTPResponse) -> Iterator[ServerEvent[Any]]:
    """Events from a text/event-stream response (comments and keep-alives skipped; ``data`` as JSON)."""
    event_id = None  # type: Optional[str]
    event = None  # type: Optional[str]
    data = []  # type: List[str]
    while True:
        raw = response.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                text = "\n".join(data)
                try:
                    value = json.loads(text)  # type: Any
                except ValueError:
                    value = text
                yield ServerEvent(event_id, event, value)
            event_id, event, data = None, None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "id":
            event_id = value
        elif name == "event":
            event = value
        elif name == "data":
            data.append(value)


def stream_events(config: Config, operation: str, params: Dict[str, Any], max_reconnects: int = 10) -> Iterator[ServerEvent[Any]]:
    """The live events of ``operation`` (one with events), resumed across drops."""
    last = int(params.pop("after", None) or params.pop("last_event_id", None) or 0)
    connected = False
    failures = 0
    while True:
        prepared = prepare(config, operation, dict(params, after=last, last_event_id=str(last) if last > 0 else None))
        prepared.headers["accept"] = "text/event-stream"
        try:
            # No read timeout on a live stream: it is quiet between events (the server sends keep-alives).
            answer = send(config, operation, prepared, max_retries=0, timeout=None)
        except SvcError as err:
            if connected and err.status == 404:
                return  # gone after it was there: the thread was deleted
            if (err.status not in (0, 429) and err.status < 500) or failures >= max_reconnects:
                raise
            failures += 1
            time.sleep(backoff(config, failures, err.headers))
            continue
        connected = True
        try:
            for e in parse_events(answer.response):
                if e.event == "error":
                    raise error_from_answer(500, e.data, answer.headers, operation)
                if e.id is not None and e.id.isdigit():
                    seq = int(e.id)
                    if seq <= last:
                        continue
                    last = seq
                failures = 0
                yield e
        except (OSError, http.client.HTTPException):
            pass  # the connection dropped: reconnect below
        finally:
            answer.close()
        failures += 1
        if failures > max_reconnects:
            return
        time.sleep(backoff(config, failures))
