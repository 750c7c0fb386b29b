"""The Python SDK against a running stack (SVC_BASE_URL, SVC_API_KEY in the environment; the account
has a default agent), plus its transport against local fake servers. Run by test/sdk/sdk-python.test.ts."""
import ast
import http.server
import json
import os
import socket
import tempfile
import threading
import time
import typing
import unittest
import uuid

import svc_sdk
import typed_usage
from svc_sdk import Svc, SvcConfigError, SvcNotFoundError, SvcPreconditionFailedError

STACK = bool(os.environ.get("SVC_BASE_URL") and os.environ.get("SVC_API_KEY"))
KEY = "svc_" + "a" * 64


class Scripted:
    """A local HTTP server answering each request with the next (status, body, headers) of a script."""

    def __init__(self, steps):
        self.seen = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def read_body(self):
                # The whole body, chunked or not, before answering: a server that answers a request
                # whose body it left unread and closes makes the client's send fail (a broken pipe).
                if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("content-length") or 0)
                return self.rfile.read(length) if length else b""

            def handle_one(self):
                body = self.read_body()
                outer.seen.append({"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "at": time.time()})
                step = steps[min(len(outer.seen), len(steps)) - 1]
                if step == "drop":
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                status, payload, headers = step
                data = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in dict(headers, **{"content-type": "application/json", "content-length": str(len(data))}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_one

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def error(status, code, headers=None):
    return (status, {"error": {"code": code, "message": code + ".", "requestId": "req_1"}}, headers or {})


class DropProxy:
    """A TCP proxy to the stack that cuts its first event-stream connection once event 2 has passed."""

    def __init__(self, target):
        host, port = target.split("//")[1].split(":")
        self.target = (host, int(port))
        self.requests = []
        self.cut = False
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client):
        upstream = socket.create_connection(self.target)
        head = client.recv(65536)
        self.requests.append(head.decode("latin-1"))
        streaming = b"text/event-stream" in head and not self.cut
        upstream.sendall(head)

        def pump_up():
            try:
                while True:
                    data = client.recv(65536)
                    if not data:
                        return
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=pump_up, daemon=True).start()
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                client.sendall(data)
                if streaming and b"id: 2\n" in data:
                    self.cut = True
                    break
        except OSError:
            pass
        for s in (client, upstream):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.sock.close()


class TransportTest(unittest.TestCase):
    def test_sources_are_python_3_9(self):
        folder = os.path.dirname(svc_sdk.__file__)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    ast.parse(f.read(), name, feature_version=(3, 9))

    def test_configuration(self):
        self.assertEqual(Svc(env={}).config.base_url, "https://api.svc.dev")
        self.assertEqual(Svc(env={"SVC_BASE_URL": "http://a.test/"}).config.base_url, "http://a.test")
        self.assertEqual(Svc(base_url="http://b.test", env={"SVC_BASE_URL": "http://a.test"}).config.base_url, "http://b.test")
        self.assertEqual(Svc(api_key="svc_x", env={"SVC_API_KEY": "svc_y"}).config.credential(), "svc_x")
        self.assertEqual(Svc(env={"SVC_HOST_CREDENTIAL": "svch_z"}).config.credential(), "svch_z")
        with tempfile.NamedTemporaryFile("w", suffix=".cred") as f:
            f.write("svch_file\n")
            f.flush()
            self.assertEqual(Svc(env={"SVC_HOST_CREDENTIAL_FILE": f.name}).config.credential(), "svch_file")
            if os.name != "nt":
                # Refused as svc-host refuses it: the credential acts for the machine.
                os.chmod(f.name, 0o644)
                with self.assertRaisesRegex(SvcConfigError, r"open to other users \(mode 644\).*chmod 600"):
                    Svc(env={"SVC_HOST_CREDENTIAL_FILE": f.name})
        with self.assertRaisesRegex(SvcConfigError, "SVC_API_KEY"):
            Svc(env={"SVC_BASE_URL": "http://127.0.0.1:9"}).me.get()

    def test_post_retried_with_one_idempotency_key(self):
        s = Scripted([error(503, "unavailable"), "drop", (201, {"id": "thr_1"}, {})])
        try:
            svc = Svc(api_key=KEY, base_url=s.url, retry_base=0.01, env={})
            self.assertEqual(svc.threads.create(title="t"), {"id": "thr_1"})
            self.assertEqual([r["method"] for r in s.seen], ["POST"] * 3)
            keys = {r["headers"].get("idempotency-key") for r in s.seen}
            self.assertEqual(len(keys), 1)
            self.assertEqual(len(keys.pop()), 36)
            self.assertEqual({r["body"] for r in s.seen}, {b'{"title": "t"}'})
        finally:
            s.close()

    def test_key_in_use_is_waited_for_and_patch_is_not_retried(self):
        s = Scripted([error(409, "idempotency_key_in_use"), (201, {"id": "fld_1"}, {})])
        try:
            svc = Svc(api_key=KEY, base_url=s.url, retry_base=0.01, env={})
            self.assertEqual(svc.drive.create_folder(name="x"), {"id": "fld_1"})
            self.assertEqual(len({r["headers"]["idempotency-key"] for r in s.seen}), 1)
        finally:
            s.close()
        s = Scripted([error(503, "unavailable")])
        try:
            svc = Svc(api_key=KEY, base_url=s.url, retry_base=0.01, env={})
            with self.assertRaises(svc_sdk.SvcServerError):
                svc.threads.update(id="thr_x", title="t")
            self.assertEqual(len(s.seen), 1)
            self.assertNotIn("idempotency-key", s.seen[0]["headers"])
        finally:
            s.close()

    def test_429_honours_retry_after_and_4xx_is_typed(self):
        s = Scripted([error(429, "rate_limited", {"retry-after": "1"}), (200, {"models": []}, {})])
        try:
            svc = Svc(api_key=KEY, base_url=s.url, retry_base=0.001, env={})
            self.assertEqual(svc.models.list(), {"models": []})
            self.assertGreaterEqual(s.seen[1]["at"] - s.seen[0]["at"], 0.95)
        finally:
            s.close()
        s = Scripted([error(412, "precondition_failed", {"etag": '"abc"'})])
        try:
            svc = Svc(api_key=KEY, base_url=s.url, env={})
            with self.assertRaises(SvcPreconditionFailedError) as caught:
                svc.drive.replace(id="file_x", content=iter([b"a", b"b"]), if_match='"old"')
            self.assertEqual((caught.exception.status, caught.exception.etag, caught.exception.request_id), (412, '"abc"', "req_1"))
            self.assertEqual(s.seen[0]["headers"].get("if-match"), '"old"')
            self.assertEqual(len(s.seen), 1)
        finally:
            s.close()

    def test_no_grant_methods(self):
        svc = Svc(api_key=KEY, env={})
        ops = set(svc_sdk.OPERATIONS)
        for absent in ("grants.create", "grants.delete", "hosts.pair", "credits.grant", "accounts.members.add", "providerKeys.set"):
            self.assertNotIn(absent, ops)
        self.assertFalse(hasattr(svc.grants, "create"))
        self.assertFalse(hasattr(svc.hosts, "pair"))
        self.assertTrue(callable(svc.grants.held))
        self.assertIs(svc.drive.create_folder, svc.drive.createFolder)
        self.assertIs(svc.keys, svc.me_api_keys)

    def test_typed_tree_and_types_resolve_at_run_time(self):
        # Every operation has its generated class, every group too; every generated type resolves (typing's own
        # introspection, on the Python running this), with the keys its schema requires required and the rest optional.
        from svc_sdk import _resources, types

        svc = Svc(api_key=KEY, env={})
        for operation in svc_sdk.OPERATIONS:
            node = svc
            for part in operation.split("."):
                node = getattr(node, part)
            self.assertIsInstance(node, _resources.METHOD_CLASSES[operation])
            self.assertIsInstance(node, svc_sdk.Method)
        self.assertIsInstance(svc.drive.locks, _resources.DriveLocks)
        resolved = 0
        for name in dir(types):
            value = getattr(types, name)
            if isinstance(value, type) and issubclass(value, dict):
                typing.get_type_hints(value)
                resolved += 1
        self.assertGreater(resolved, 300)
        self.assertEqual(types.Thread.__optional_keys__, frozenset())
        self.assertIn("forkedFrom", types.Thread.__required_keys__)
        self.assertEqual(typing.get_type_hints(types.Thread)["forkedFrom"], typing.Optional[types.ThreadForkedFrom])
        self.assertEqual(typing.get_type_hints(types.DriveItem)["kind"], typing.Literal["file", "folder"])
        self.assertEqual(types.CreateThreadRequestInput.__required_keys__, frozenset())
        self.assertEqual(types.AppendTextRequestInput.__required_keys__, frozenset({"text"}))
        self.assertTrue(types.AppendTextRequestInput.__optional_keys__)
        hints = typing.get_type_hints(types.AddRedirectRequestInput)
        self.assertEqual((hints["from"], types.AddRedirectRequestInput.__required_keys__), (str, frozenset({"from", "to"})))

    def test_none_is_not_sent_except_where_null_means_something_and_keyword_names(self):
        s = Scripted([(201, {"id": "x"}, {})])
        try:
            svc = Svc(api_key=KEY, base_url=s.url, env={})
            svc.threads.create(title=None, message="m")  # title takes no null: None is "not given"
            svc.drive.copy(id="file_x", parent_id=None)  # parentId takes null: the root
            svc.drive.copy(id="file_x", name="n")  # absent: the same folder
            svc.profiles.diff(id="prf_x", from_="v1", to="v2")
            svc.profiles.diff(id="prf_x", **{"from": "v1", "to": "v2"})
            svc.drive.list(parentId="fld_1", limit=2)
            svc.drive.delete(id="file_x", recursive=True)
            self.assertEqual(
                [(r["path"], r["body"]) for r in s.seen],
                [
                    ("/threads", b'{"message": "m"}'),
                    ("/drive/file_x/copy", b'{"parentId": null}'),
                    ("/drive/file_x/copy", b'{"name": "n"}'),
                    ("/profiles/prf_x/diff?from=v1&to=v2", b""),
                    ("/profiles/prf_x/diff?from=v1&to=v2", b""),
                    ("/drive?limit=2&parentId=fld_1", b""),
                    ("/drive/file_x?recursive=true", b""),
                ],
            )
        finally:
            s.close()


@unittest.skipUnless(STACK, "needs SVC_BASE_URL and SVC_API_KEY (a running stack)")
class StackTest(unittest.TestCase):
    def setUp(self):
        self.svc = Svc()  # the key and the origin from the environment

    def test_key_from_the_environment_and_keys(self):
        me = self.svc.me.get()
        self.assertTrue(me["accountId"].startswith("acct_"))
        self.assertTrue(me.response.request_id)
        created = self.svc.keys.create(name="from python")
        other = Svc(api_key=created["key"])
        self.assertEqual(other.me.get()["accountId"], me["accountId"])
        self.assertIn(created["id"], [k["id"] for k in self.svc.keys.list.all()])
        self.svc.keys.revoke(key_id=created["id"])
        with self.assertRaises(svc_sdk.SvcAuthenticationError):
            other.me.get()

    def test_drive_streams_preconditions_and_errors(self):
        name = "py-%s.txt" % uuid.uuid4().hex[:8]
        chunks = (("line %d\n" % i).ljust(1024, ".").encode() for i in range(64))
        item = self.svc.drive.upload(name=name, content=chunks, content_type="text/plain", if_none_match="*")
        self.assertEqual((item["size"], item["contentType"]), (64 * 1024, "text/plain"))
        with self.assertRaises(SvcPreconditionFailedError) as taken:
            self.svc.drive.upload(name=name, content=b"again", if_none_match="*")
        self.assertEqual(taken.exception.etag, item["etag"])
        got = self.svc.drive.read(id=item["id"])
        self.assertEqual((got.status, got.etag), (200, item["etag"]))
        self.assertEqual(sum(len(c) for c in got.iter_bytes(4096)), 64 * 1024)
        self.assertTrue(self.svc.drive.read(id=item["id"], if_none_match=item["etag"]).not_modified)
        v2 = self.svc.drive.replace(id=item["id"], content="v2", if_match=item["etag"])
        self.assertEqual(self.svc.drive.read(id=item["id"]).read(), b"v2")
        with self.assertRaises(SvcPreconditionFailedError) as stale:
            self.svc.drive.replace(id=item["id"], content="v3", if_match=item["etag"])
        self.assertEqual(stale.exception.etag, v2["etag"])
        self.svc.drive.delete(id=item["id"])
        with self.assertRaises(SvcNotFoundError) as gone:
            self.svc.drive.get(id=item["id"])
        self.assertEqual((gone.exception.status, gone.exception.operation), (404, "drive.get"))
        self.assertTrue(gone.exception.code.endswith("not_found"))

    def test_pagination(self):
        parent = self.svc.drive.create_folder
        folder = parent(name="py-many-%s" % uuid.uuid4().hex[:8])
        names = ["f%d" % i for i in range(7)]
        for n in names:
            parent(name=n, parent_id=folder["id"])
        first = self.svc.drive.list(parent_id=folder["id"], limit=3)
        self.assertEqual(len(first["items"]), 3)
        self.assertIsNotNone(first["nextCursor"])
        self.assertEqual([i["name"] for i in self.svc.drive.list.all(parent_id=folder["id"], limit=3)], names)

    def test_thread_stream_resumed_after_a_dropped_connection(self):
        proxy = DropProxy(os.environ["SVC_BASE_URL"])
        try:
            live = Svc(base_url=proxy.url, retry_base=0.02)
            thread = live.threads.create(title="py", message="hello from python")
            seen = []
            for e in live.threads.events.stream(id=thread["id"]):
                seen.append(e)
                if e.event in ("run.completed", "run.failed"):
                    break
        finally:
            proxy.close()
        self.assertTrue(proxy.cut)
        resumed = [r for r in proxy.requests if "text/event-stream" in r.lower()]
        self.assertEqual(len(resumed), 2)
        self.assertNotIn("last-event-id", resumed[0].lower())
        self.assertRegex(resumed[1].lower(), r"last-event-id: \d+")
        ids = [int(e.id) for e in seen if e.id is not None]
        listed = [e["seq"] for e in self.svc.threads.events.all(id=thread["id"])]
        self.assertEqual(ids, listed[: len(ids)])
        self.assertEqual(seen[-1].event, "run.completed")
        answer = [e for e in seen if e.event == "message.created" and e.data["data"].get("role") == "assistant"]
        self.assertIn("hello from python", json.dumps([e.data for e in answer]))

    def test_one_call_per_family(self):
        svc = self.svc
        me = svc.me.get()
        self.assertIn("svc/dev", [m["id"] for m in svc.models.list()["models"]])
        self.assertIn("currency", svc.credits.get())
        agent = svc.agents.create(name="py helper")
        self.assertEqual(svc.agents.get(id=agent["id"])["id"], agent["id"])
        profile = svc.profiles.create(name="py taste")
        c1 = svc.profiles.commit(id=profile["id"], message="first")
        c2 = svc.profiles.commit(id=profile["id"], message="second")
        self.assertEqual({c1["id"], c2["id"]} - {v["id"] for v in svc.profiles.log(id=profile["id"])["versions"]}, set())
        self.assertIsInstance(svc.profiles.diff(id=profile["id"], **{"from": c1["id"], "to": c2["id"]}), dict)
        self.assertIn("paper", [v["id"] for v in svc.trading.venues()["venues"]])
        book = svc.trading.book(symbol="BTC/USD", depth=5)
        order = svc.trading.order(symbol="BTC/USD", side="buy", type="limit", qty="0.01", price=book["bids"][-1]["price"], time_in_force="gtc")
        self.assertEqual([o["status"] for o in svc.trading.cancel(order_id=order["id"])["orders"]], ["cancelled"])
        self.assertIsInstance(svc.sites.list()["sites"], list)
        self.assertEqual(svc.code.run(code="6 * 7")["result"], 42)
        self.assertEqual(svc.hosts.list(id=me["accountId"])["hosts"], [])
        self.assertEqual(svc.threads.list(limit=1)["nextCursor"] is None or True, True)


    def test_the_typed_sample_program_runs(self):
        # tests/typed_usage.py, which mypy --strict checks, does what its types say against the stack.
        seen = typed_usage.use(self.svc)
        self.assertTrue(seen["account"].startswith("acct_"))
        self.assertEqual(seen["kind"], "human")
        self.assertTrue(seen["request_id"])
        self.assertIn("svc/dev", seen["models"])
        self.assertIsNotNone(seen["cursor"])
        self.assertEqual(seen["names"], ["a.txt", "b.txt", "c.txt"])
        self.assertEqual(seen["first"], b"a.txt")
        self.assertEqual(seen["events"][0], "thread.created")
        self.assertEqual(seen["events"][-1], "run.completed")
        self.assertIsNone(seen["title"])
        self.assertIsInstance(seen["diff"], dict)

    def test_trading_notional_order_and_its_updates_live(self):
        order = self.svc.trading.order(symbol="ETH/USD", side="buy", notional="25.50")
        self.assertEqual((order["notional"], order["status"]), ("25.5", "filled"))
        self.assertLessEqual(float(order["filledNotional"]), 25.5)
        seen = []
        for e in self.svc.trading.events.stream():
            seen.append(e)
            if e.event == "filled" and e.data["order"]["id"] == order["id"]:
                break
        mine = [(e.event, e.data["order"]["filledQty"]) for e in seen if e.data["order"] and e.data["order"]["id"] == order["id"]]
        self.assertEqual(mine, [("accepted", "0"), ("filled", order["filledQty"])])
        self.assertEqual([int(e.id) for e in seen], [e["seq"] for e in self.svc.trading.events.all()][: len(seen)])
        self.assertEqual([int(e.id) for e in seen], list(range(1, len(seen) + 1)))

    def test_a_post_under_one_idempotency_key_happens_once(self):
        # The server's Idempotency-Key support is being built: this runs once the OpenAPI document declares the header.
        if "idempotency-key" not in json.dumps(self.svc.system.openapi()).lower():
            self.skipTest("the server does not declare Idempotency-Key yet")
        key = "py-%s" % uuid.uuid4().hex
        a = self.svc.drive.create_folder({"idempotency_key": key}, name="once-py")
        b = self.svc.drive.create_folder({"idempotency_key": key}, name="once-py")
        self.assertEqual(a["id"], b["id"])
        self.assertEqual(b.response.headers.get("idempotent-replayed"), "true")
        self.assertEqual(len([i for i in self.svc.drive.list.all() if i["name"] == "once-py"]), 1)


if __name__ == "__main__":
    unittest.main()
