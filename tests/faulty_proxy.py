"""An HTTP proxy on loopback that puts faults between a client and a real server: answers 503
(S3's ``SlowDown``) to the next requests, or forwards a request and then drops the connection
without its answer (a write that happened but whose answer was lost). Everything else passes
through unchanged. Used with the S3 servers of tests/object_store.py and the REST catalogs.

::

    with FaultyProxy(server.endpoint) as proxy:
        proxy.throttle(2)                       # the next 2 requests: 503 SlowDown
        proxy.lose_answer(method="PUT")         # the next PUT is done, its answer dropped
        ... point the client at proxy.url ...
"""

from __future__ import annotations

import http.client
import http.server
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from urllib.parse import urlsplit

__all__ = ["FaultyProxy"]

SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
             b"<Message>Please reduce your request rate.</Message></Error>")


@dataclass
class _Rule:
    kind: str  # "throttle" | "lose"
    remaining: int
    matches: Callable[[str, str], bool]


@dataclass
class _State:
    rules: list[_Rule] = field(default_factory=list)
    seen: list[tuple[str, str, int]] = field(default_factory=list)  # method, path, status
    bodies: list[bytes] = field(default_factory=list)  # the request body of each of seen
    headers: list[dict[str, str]] = field(default_factory=list)  # its headers, names lower-cased
    bytes_answered: int = 0  # body bytes sent back to the client
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, method: str, path: str, status: int, body: bytes,
               headers: dict[str, str]) -> None:
        with self.lock:
            self.seen.append((method, path, status))
            self.bodies.append(body)
            self.headers.append({k.lower(): v for k, v in headers.items()})

    def take(self, method: str, path: str) -> str | None:
        with self.lock:
            for rule in self.rules:
                if rule.remaining > 0 and rule.matches(method, path):
                    rule.remaining -= 1
                    return rule.kind
        return None


class FaultyProxy:
    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self.target_host = parts.hostname or "127.0.0.1"
        self.target_port = parts.port or 80
        self.state = _State()
        state, host, port = self.state, self.target_host, self.target_port

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = state.take(self.command, self.path)
                if fault == "throttle":
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(SLOW_DOWN)
                    state.record(self.command, self.path, 503, body, dict(self.headers))
                    return
                conn = http.client.HTTPConnection(host, port, timeout=30)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "proxy-connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                response = conn.getresponse()
                data = response.read()
                state.record(self.command, self.path, response.status, body, headers)
                if fault == "lose":  # done on the server; the client never hears of it
                    self.close_connection = True
                    conn.close()
                    return
                self.send_response_only(response.status, response.reason)
                for k, v in response.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                    with state.lock:
                        state.bytes_answered += len(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_PATCH = _any

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None
                 ) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _add(self, kind: str, count: int, method: str | None, path_contains: str | None
             ) -> None:
        def matches(m: str, p: str) -> bool:
            return (method is None or m == method) and (path_contains is None
                                                         or path_contains in p)

        with self.state.lock:
            self.state.rules.append(_Rule(kind, count, matches))

    def throttle(self, count: int, *, method: str | None = None,
                 path_contains: str | None = None) -> None:
        """Answer the next ``count`` matching requests 503 SlowDown (not forwarded)."""
        self._add("throttle", count, method, path_contains)

    def lose_answer(self, count: int = 1, *, method: str | None = None,
                    path_contains: str | None = None) -> None:
        """Forward the next ``count`` matching requests, then drop the connection unanswered."""
        self._add("lose", count, method, path_contains)

    def requests(self, method: str | None = None) -> list[tuple[str, str, int]]:
        return [r for r in self.state.seen if method is None or r[0] == method]

    def bodies(self, method: str | None = None) -> list[bytes]:
        """The request bodies of :meth:`requests`, in the same order."""
        return [b for r, b in zip(self.state.seen, self.state.bodies, strict=True)
                if method is None or r[0] == method]

    def headers(self, method: str | None = None) -> list[dict[str, str]]:
        """The request headers of :meth:`requests` (names lower-cased), in the same order."""
        return [h for r, h in zip(self.state.seen, self.state.headers, strict=True)
                if method is None or r[0] == method]
