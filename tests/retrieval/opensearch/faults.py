"""A small HTTP proxy in front of the real OpenSearch node that can fail on purpose: answer the
next N requests with a given status, or go away entirely (then its port refuses connections)."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        parsed = urllib.parse.urlparse(upstream)
        self.upstream = (parsed.hostname, parsed.port or 80)
        self.fail_next = 0
        self.fail_status = 503
        self.bulk_item_rejections = 0
        self.bulk_item_status = 429
        self.rejected_items: list[str] = []
        self.partial_searches = 0
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status sent)
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def setup(self):
                super().setup()
                with proxy._lock:
                    proxy._connections.add(self.connection)

            def finish(self):
                with proxy._lock:
                    proxy._connections.discard(self.connection)
                super().finish()

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    failing = proxy.fail_next > 0
                    if failing:
                        proxy.fail_next -= 1
                if failing:
                    payload = b'{"error":{"type":"injected","reason":"injected by FaultProxy"},"status":%d}' % (
                        proxy.fail_status)
                    self._reply(proxy.fail_status, payload, "application/json")
                    return
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body, headers=headers)
                reply = conn.getresponse()
                data = reply.read()
                if self.path.split("?")[0].endswith("/_bulk"):
                    data = proxy._reject_bulk_items(data)
                if self.path.split("?")[0].endswith("/_msearch"):
                    data = proxy._drop_a_shard(data)
                self._reply(reply.status, data, reply.getheader("Content-Type", "application/json"))
                conn.close()

            def _reply(self, status, payload, content_type):
                proxy.requests.append((self.command, self.path, status))
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def reject_bulk_items(self, count: int, status: int = 429) -> None:
        """Rewrite the next ``count`` successful bulk items as refused with ``status`` (as a node
        whose write queue is full answers), although the node did apply them."""
        with self._lock:
            self.bulk_item_rejections, self.bulk_item_status = count, status

    def _reject_bulk_items(self, data: bytes) -> bytes:
        with self._lock:
            if self.bulk_item_rejections <= 0:
                return data
            reply = json.loads(data)
            for item in reply.get("items", []):
                (action, result), = item.items()
                if self.bulk_item_rejections > 0 and "error" not in result:
                    item[action] = {"_index": result.get("_index"), "_id": result["_id"],
                                    "status": self.bulk_item_status,
                                    "error": {"type": "rejected_execution_exception",
                                              "reason": "injected by FaultProxy"}}
                    self.bulk_item_rejections -= 1
                    self.rejected_items.append(result["_id"])
                    reply["errors"] = True
            return json.dumps(reply).encode()

    def lose_a_shard(self, count: int) -> None:
        """The next ``count`` _msearch replies come back as when a node holding a shard copy died
        mid-search: 200, one shard failed, that shard's hits missing (here: all hits dropped)."""
        with self._lock:
            self.partial_searches = count

    def _drop_a_shard(self, data: bytes) -> bytes:
        with self._lock:
            if self.partial_searches <= 0:
                return data
            self.partial_searches -= 1
        reply = json.loads(data)
        for response in reply.get("responses", []):
            shards = response.setdefault("_shards", {"total": 1, "successful": 1, "skipped": 0, "failed": 0})
            shards["failed"], shards["successful"] = 1, max(0, shards.get("successful", 1) - 1)
            shards["failures"] = [{"shard": 0, "index": "x", "reason": {
                "type": "node_disconnected_exception", "reason": "injected by FaultProxy"}}]
            response.get("hits", {})["hits"] = []
        return json.dumps(reply).encode()

    def fail(self, count: int, status: int = 503) -> None:
        with self._lock:
            self.fail_next, self.fail_status = count, status

    def stop(self) -> None:
        """Stop listening and cut every open (keep-alive) connection."""
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for conn in list(self._connections):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)


def dead_url() -> str:
    """A localhost URL nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"
