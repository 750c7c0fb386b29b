"""A user's program on the typed SDK. test/sdk/sdk-python.test.ts type-checks it with `mypy --strict` against
the installed package (each `assert_type` must hold, each `type: ignore` must be needed: strict warns of an
unused one), and test_sdk.py runs `use()` against the stack, so the typed keyword arguments are the ones that
work."""
import io
import uuid
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Literal, Optional

from svc_sdk import Download, ResponseInfo, ServerEvent, Svc, response_of
from svc_sdk.types import CreatedThread, DriveItem, DriveItemList, Me, ModelList, Thread, ThreadEvent

if TYPE_CHECKING:
    from typing_extensions import assert_type
else:

    def assert_type(value, _type):
        return value


def use(svc: Svc) -> Dict[str, Any]:
    """One call of each kind, typed; returns what it saw for the test to check."""
    me = svc.me.get()
    assert_type(me, Me)
    account: str = me["accountId"]
    kind = me["kind"]
    assert_type(kind, Literal["human", "agent", "host"])
    info = response_of(me)
    assert_type(info, Optional[ResponseInfo])

    models = svc.models.list(use_case="development")
    assert_type(models, ModelList)
    model_ids: List[str] = [m["id"] for m in models["models"]]

    # Keyword arguments in snake_case; a per-call option first; a body field that takes null (None: the root).
    folder = svc.drive.create_folder({"idempotency_key": str(uuid.uuid4())}, name="typed-%s" % uuid.uuid4().hex[:8], parent_id=None)
    assert_type(folder, DriveItem)
    for name in ("a.txt", "b.txt", "c.txt"):
        svc.drive.upload(name=name, parent_id=folder["id"], content=io.BytesIO(name.encode()), content_type="text/plain", if_none_match="*")
    page = svc.drive.list(parent_id=folder["id"], limit=2)
    assert_type(page, DriveItemList)
    cursor: Optional[str] = page["nextCursor"]
    items = svc.drive.list.all(parent_id=folder["id"], limit=2)
    assert_type(items, Iterator[DriveItem])
    names = [item["name"] for item in items]
    download = svc.drive.read(id=page["items"][0]["id"])
    assert_type(download, Download)
    first: bytes = download.read()
    removed = svc.drive.delete(id=folder["id"], recursive=True)

    thread = svc.threads.create(title="typed", message="hello from a typed program")
    assert_type(thread, CreatedThread)
    status = thread["status"]
    assert_type(status, Literal["idle", "running"])
    seen: List[str] = []
    for event in svc.threads.events.stream(id=thread["id"]):
        assert_type(event, ServerEvent[ThreadEvent])
        if event.id is not None:
            seen.append(event.data["type"])
        if event.event in ("run.completed", "run.failed"):
            break
    renamed = svc.threads.update(id=thread["id"], title=None)  # null clears the title
    assert_type(renamed, Thread)

    # A query parameter named by a Python keyword: `from_` (sent as `from`).
    profile = svc.profiles.create(name="typed taste")
    c1 = svc.profiles.commit(id=profile["id"], message="first")
    c2 = svc.profiles.commit(id=profile["id"], message="second")
    diff = svc.profiles.diff(id=profile["id"], from_=c1["id"], to=c2["id"])

    return {
        "account": account,
        "kind": kind,
        "request_id": info.request_id if info else None,
        "models": model_ids,
        "cursor": cursor,
        "names": names,
        "first": first,
        "removed": removed,
        "events": seen,
        "title": renamed["title"],
        "diff": diff,
    }


def refused(svc: Svc) -> None:
    """Never run: calls a type checker refuses, each marked with the error it must report."""
    svc.threads.get()  # type: ignore[call-arg]
    svc.threads.create(title=1)  # type: ignore[arg-type]
    svc.drive.list(parentId="fld_x")  # type: ignore[call-arg]
    svc.trading.order(symbol="BTC/USD", side="hold", qty="1")  # type: ignore[arg-type]
    svc.threads.get.all()  # type: ignore[attr-defined]
    svc.grants.create()  # type: ignore[attr-defined]
    svc.hosts.pair()  # type: ignore[attr-defined]
    svc.nothing  # type: ignore[attr-defined]
    svc.me.get()["nope"]  # type: ignore[typeddict-item]
    svc.drive.create_folder(name="x", parent_id=1)  # type: ignore[arg-type]
    svc.threads.create(agent_id=None)  # type: ignore[arg-type]
