"""One call of one operation: the request built from the operation table and keyword arguments,
sent with retries (network errors, 408, 429 and 5xx; for GET/PUT/DELETE, and for POST under an
``Idempotency-Key`` made once per call and sent on every attempt), the answer read into JSON or a
typed error."""
import http.client
import json
import keyword
import os
import random
import re
import stat
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, Mapping, Optional, Tuple, Union
from urllib.parse import quote, urlencode, urlsplit

from ._operations import OPERATIONS
from .errors import SvcConfigError, SvcConnectionError, error_from_answer, retry_after_seconds

DEFAULT_BASE_URL = "https://api.svc.dev"
VERSION = "0.1.0"
RETRY_STATUS = {408, 429, 500, 502, 503, 504}

Body = Union[bytes, str, Iterable[bytes], Any]


@dataclass
class Config:
    base_url: str
    api_key: Optional[str]
    host_credential: Optional[str]
    account_id: Optional[str] = None
    max_retries: int = 3
    retry_base: float = 0.25
    retry_max: float = 30.0
    timeout: Optional[float] = 60.0

    def credential(self) -> str:
        value = self.api_key or self.host_credential
        if not value:
            raise SvcConfigError("No API key: set SVC_API_KEY (or pass api_key) to call the svc API.")
        return value


def _non_empty(value: Optional[str]) -> Optional[str]:
    return value.strip() if value is not None and value.strip() else None


def read_credential_file(path: str) -> Optional[str]:
    """A host credential file, read as svc-host reads it: one its group or other users may read or
    write is refused (the credential acts for the machine)."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise SvcConfigError("The credential file %s is not a regular file." % path)
        if os.name != "nt" and st.st_mode & 0o077:
            raise SvcConfigError(
                "The credential file %s is open to other users (mode %03o); it must be readable by you only: chmod 600 %s"
                % (path, st.st_mode & 0o777, path)
            )
        with open(path, encoding="utf-8") as f:
            return _non_empty(f.read())
    except OSError as err:
        raise SvcConfigError("SVC_HOST_CREDENTIAL_FILE cannot be read: %s" % err) from err


def resolve_config(
    api_key: Optional[str] = None,
    base_url: Optional[str] = None,
    host_credential: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    **options: Any
) -> Config:
    """Arguments first, then the environment (SVC_API_KEY, SVC_BASE_URL, SVC_HOST_CREDENTIAL), then the defaults."""
    env = os.environ if env is None else env
    url = (_non_empty(base_url) or _non_empty(env.get("SVC_BASE_URL")) or DEFAULT_BASE_URL).rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SvcConfigError("SVC_BASE_URL is not a URL: %s" % url)
    host = _non_empty(host_credential) or _non_empty(env.get("SVC_HOST_CREDENTIAL"))
    host_file = _non_empty(env.get("SVC_HOST_CREDENTIAL_FILE"))
    if host is None and host_file is not None:
        host = read_credential_file(host_file)
    return Config(
        base_url=url,
        api_key=_non_empty(api_key) or _non_empty(env.get("SVC_API_KEY")),
        host_credential=host,
        **options
    )


def _camel(name: str) -> str:
    """A keyword argument's API name: snake_case to camelCase; ``from_`` (a Python keyword's spelling) to ``from``."""
    if name.endswith("_") and keyword.iskeyword(name[:-1]):
        return name[:-1]
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


@dataclass
class Prepared:
    method: str
    url: str
    headers: Dict[str, str]
    body: Any = None
    replayable: bool = True


def spec_of(operation: str) -> Dict[str, Any]:
    spec = OPERATIONS.get(operation)
    if spec is None:
        raise ValueError("svc: no such operation: %s" % operation)
    return spec


def prepare(config: Config, operation: str, params: Mapping[str, Any]) -> Prepared:
    """The request for ``operation``: keyword arguments (snake_case or camelCase) into the path, query,
    headers, and the rest as the JSON body's fields. None is "not given", except for a body field that
    takes null (the table's ``nulls``: ``parent_id=None`` moves to the root), which is sent as null."""
    spec = spec_of(operation)
    nulls = spec.get("nulls") or ()
    rest = {}  # type: Dict[str, Any]
    for key, value in params.items():
        name = key if key in ("body", "content") or (key == "content_type" and spec["body"] == "content") else _camel(key)
        if value is not None or name in nulls:
            rest[name] = value

    def path_value(match: "re.Match[str]") -> str:
        name = match.group(1)
        value = rest.pop(name, None)
        if value is None or value == "":
            raise ValueError("svc: %s needs %s" % (operation, name))
        return quote(str(value), safe="")

    path = re.sub(r"\{(\w+)\}", path_value, spec["path"])
    query = [(q, _scalar(rest.pop(q))) for q in spec["query"] if q in rest]
    url = config.base_url + path + ("?" + urlencode(query) if query else "")
    headers = {"user-agent": "svc-sdk-python/%s" % VERSION, "accept": "*/*" if spec["answer"] == "bytes" else "application/json"}
    for name, header in spec["headers"].items():
        if name in rest:
            headers[header] = str(rest.pop(name))
    if spec["auth"] == "key":
        headers["authorization"] = "Bearer " + config.credential()
    if config.account_id:
        headers["x-svc-account"] = config.account_id
    body = None  # type: Union[None, bytes, Iterator[bytes]]
    replayable = True
    if spec["body"] in ("json", "json-nested"):
        value = dict(rest) if spec["body"] == "json" else rest.pop("body", {})
        if spec["body"] == "json":
            rest.clear()
        body = json.dumps(value).encode("utf-8")
        headers["content-type"] = "application/json"
    elif spec["body"] == "content":
        if "content" not in rest:
            raise ValueError("svc: %s needs content" % operation)
        content = rest.pop("content")
        headers["content-type"] = rest.pop("content_type", None) or "application/octet-stream"
        if isinstance(content, str):
            content = content.encode("utf-8")
        if isinstance(content, (bytes, bytearray)):
            body = bytes(content)
        elif hasattr(content, "read"):
            body = _file_chunks(content)
            replayable = False
        else:
            body = iter(content)
            replayable = False
    if rest:
        raise ValueError("svc: %s takes no %s" % (operation, ", ".join(sorted(rest))))
    return Prepared(spec["method"], url, headers, body, replayable)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _file_chunks(f: Any, size: int = 64 * 1024) -> Iterator[bytes]:
    while True:
        chunk = f.read(size)
        if not chunk:
            return
        yield chunk.encode("utf-8") if isinstance(chunk, str) else chunk


def backoff(config: Config, attempt: int, headers: Optional[Mapping[str, str]] = None) -> float:
    """The wait before retry ``attempt`` (1, 2, ...): the server's Retry-After, else exponential backoff with jitter."""
    asked = retry_after_seconds(headers or {})
    if asked is not None:
        return min(asked, config.retry_max)
    ceiling = min(config.retry_max, config.retry_base * (2.0 ** (attempt - 1)))
    return ceiling / 2 + random.random() * ceiling / 2


@dataclass
class Answer:
    """A successful answer, its body not yet read."""

    status: int
    headers: Dict[str, str]
    response: http.client.HTTPResponse
    connection: http.client.HTTPConnection = field(repr=False)

    def read(self) -> bytes:
        try:
            return self.response.read()
        finally:
            self.close()

    def close(self) -> None:
        self.connection.close()


def _connect(url: str, timeout: Optional[float]) -> Tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.netloc, timeout=timeout)
    target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    return conn, target


def may_retry(method: str, status: int, code: Optional[str] = None) -> bool:
    """Whether an attempt that ended with ``status`` (0: no answer) may be sent again: GET, PUT and DELETE
    are idempotent; a POST carries its Idempotency-Key (and the server says ``idempotency_key_in_use``
    while the first attempt runs); a PATCH, which takes no key, only when the server did nothing (429)."""
    if method == "PATCH":
        return status == 429
    if status == 0 or status in RETRY_STATUS:
        return True
    return method == "POST" and status == 409 and code == "idempotency_key_in_use"


def send(
    config: Config,
    operation: str,
    prepared: Prepared,
    idempotency_key: Optional[str] = None,
    max_retries: Optional[int] = None,
    headers: Optional[Mapping[str, str]] = None,
    timeout: Optional[float] = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Answer:
    """Sends ``prepared``, retrying what may be retried; the successful answer (2xx or 304), or the typed error."""
    sent = dict(prepared.headers)
    sent.update(headers or {})
    if prepared.method == "POST":
        sent.setdefault("idempotency-key", idempotency_key or str(uuid.uuid4()))
    retries = (config.max_retries if max_retries is None else max_retries) if prepared.replayable else 0
    attempt = 0
    while True:
        conn, target = _connect(prepared.url, timeout if timeout is not None else config.timeout)
        try:
            chunked = prepared.body is not None and not isinstance(prepared.body, bytes)
            conn.request(prepared.method, target, body=prepared.body, headers=sent, encode_chunked=chunked)
            res = conn.getresponse()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            if attempt < retries and may_retry(prepared.method, 0):
                attempt += 1
                sleep(backoff(config, attempt))
                continue
            raise SvcConnectionError(0, "connection_error", "%s %s failed: %s" % (prepared.method, prepared.url, err), None, operation) from err
        answer_headers = {k.lower(): v for k, v in res.getheaders()}
        if 200 <= res.status < 300 or res.status == 304:
            return Answer(res.status, answer_headers, res, conn)
        text = res.read()
        conn.close()
        try:
            parsed = json.loads(text.decode("utf-8")) if text else None
        except ValueError:
            parsed = None
        error = error_from_answer(res.status, parsed, answer_headers, operation)
        if attempt < retries and may_retry(prepared.method, res.status, error.code):
            attempt += 1
            sleep(backoff(config, attempt, answer_headers))
            continue
        raise error
