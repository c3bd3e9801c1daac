"""The web server ``make run`` starts (explorer/serve.py): waitress whose connections stay
open after a 204 or a 304 (waitress itself closes them: every revalidation of a table by an
Iceberg REST client paid a new connection), and still close when the client asks."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from explorer.run import web_command
from explorer.serve import make_server


def _app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    status = environ["PATH_INFO"].strip("/") or "200"
    phrase = {"200": "OK", "204": "No Content", "304": "Not Modified"}[status]
    if status == "200":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    start_response(f"{status} {phrase}", [("ETag", '"v1"')])
    return [b""]


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    server = make_server(_app, listen=f"127.0.0.1:{free}", threads=2)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield free
    server.close()


def _ask(conn: http.client.HTTPConnection, path: str,
         headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    conn.request("GET", path, headers=headers or {})
    answer = conn.getresponse()
    answer.read()
    return answer


@pytest.mark.parametrize("status", [204, 304])
def test_a_bodiless_answer_keeps_the_connection(port: int, status: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        first = _ask(conn, f"/{status}")
        assert first.status == status and first.getheader("Connection") is None
        sock = conn.sock
        assert sock is not None  # http.client keeps a socket the server did not close
        second = _ask(conn, "/200")
        assert second.status == 200 and conn.sock is sock  # the same connection
    finally:
        conn.close()


def test_a_client_asking_to_close_is_closed(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        answer = _ask(conn, "/304", {"Connection": "close"})
        assert answer.status == 304 and answer.getheader("Connection") == "close"
        assert conn.sock is None
    finally:
        conn.close()


def test_make_run_serves_with_it() -> None:
    assert web_command("127.0.0.1", 8000)[1:3] == ["-m", "explorer.serve"]
