"""The web server ``make run`` starts (``python -m explorer.serve --listen=HOST:PORT``):
waitress, with one change: an HTTP/1.1 answer that has no body by definition (``204 No
Content``, ``304 Not Modified``) keeps the connection open.

waitress 3.0 closes the connection after every such answer, because it decides keep-alive by
the presence of a ``Content-Length`` header, which RFC 9110 forbids on a 204 (and which waitress
drops from a 304). A client that revalidates with ``If-None-Match`` — an Iceberg REST client
reloading a table, a browser — then pays a new TCP connection per 304. The length of such an
answer is known to be zero (RFC 9112 §6.3), so the connection may stay open as after any other
answer; a request that asked for ``Connection: close``, or HTTP/1.0, still closes it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer, create_server
from waitress.task import WSGITask

__all__ = ["KeepAliveChannel", "main", "make_server"]

DEFAULT_APP = "explorer.wsgi:application"


class _Task(WSGITask):
    _bodiless_keep_alive = False

    def build_response_header(self) -> bytes:
        self._bodiless_keep_alive = (
            self.version == "1.1" and not self.has_body and not self.status.startswith("1")
            and self.request.headers.get("CONNECTION", "").lower() != "close")
        try:
            header: bytes = super().build_response_header()
            return header
        finally:
            self._bodiless_keep_alive = False

    def set_close_on_finish(self) -> None:
        if not self._bodiless_keep_alive:  # only the "no Content-Length" rule is lifted
            super().set_close_on_finish()


class KeepAliveChannel(HTTPChannel):
    """waitress's channel whose tasks keep the connection after a 204 or a 304."""

    task_class = _Task


def make_server(app: Any, **options: Any) -> Any:
    """A waitress server of ``app`` (``options`` as ``waitress.serve`` takes them) whose
    channels are :class:`KeepAliveChannel`; call ``.run()`` to serve."""
    server = create_server(app, **options)
    servers = [server] if isinstance(server, BaseWSGIServer) else [
        s for s in server.map.values() if isinstance(s, BaseWSGIServer)]
    for one in servers:
        one.channel_class = KeepAliveChannel
    return server


def _load(spec: str) -> Any:
    module, _, name = spec.partition(":")
    mod = __import__(module, fromlist=[name or "application"])
    return getattr(mod, name or "application")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m explorer.serve",
                                     description="Serve the explorer with waitress.")
    parser.add_argument("--listen", action="append", required=True,
                        help="HOST:PORT (repeatable)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("app", nargs="?", default=DEFAULT_APP)
    args = parser.parse_args(argv)
    server = make_server(_load(args.app), listen=" ".join(args.listen), threads=args.threads)
    server.print_listen("Serving on http://{}:{}")
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
