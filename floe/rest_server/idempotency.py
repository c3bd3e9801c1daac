"""``Idempotency-Key`` (the REST spec's header on every change): the first request with a key
runs; a request with the same key and the same body within the key's lifetime gets the
stored answer without running again, and one that arrives while the first still runs waits
for it. Answers finalized are 2xx and 4xx (the spec's "finalize & replay"); a 5xx is not
stored, so a retry runs again. The same key with another request is refused (422).

Keys are scoped by the principal the server is given (the user), so one user's key never
replays another's answer. The store is in memory: one per process, which is what a single
web process needs; a deployment with several web processes behind one address must route a
client to one process or accept that a retry reaching another process runs again (whose
requirements then refuse a commit made twice).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from floe.rest_server.server import Response

__all__ = ["IdempotencyStore", "fingerprint"]

#: Spec: "Catalogs SHOULD NOT expire keys before the end of the advertised token lifetime".
DEFAULT_LIFETIME_S = 30 * 60
DEFAULT_MAX_KEYS = 10_000


def fingerprint(method: str, path: str, body: bytes) -> str:
    """What "the same request" means: method, path and body."""
    h = hashlib.sha256()
    for part in (method.upper().encode(), path.encode(), body):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


@dataclass
class _Entry:
    fingerprint: str
    started: float
    done: threading.Event = field(default_factory=threading.Event)
    response: Response | None = None


class IdempotencyStore:
    """Answers by (principal, key), kept ``lifetime_s`` seconds from the first request, at
    most ``max_keys`` (the oldest finished ones go first)."""

    def __init__(self, lifetime_s: float = DEFAULT_LIFETIME_S,
                 max_keys: int = DEFAULT_MAX_KEYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.lifetime_s = lifetime_s
        self.max_keys = max_keys
        #: How long a request waits for the first one with its key to finish.
        self.wait_s = 120.0
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def lifetime_iso(self) -> str:
        """The lifetime as the ISO-8601 duration ``/v1/config`` advertises."""
        return f"PT{int(self.lifetime_s)}S"

    def run(self, principal: str, key: str, request_fingerprint: str,
            action: Callable[[], Response], *, conflict: Callable[[], Response],
            replayed: Callable[[Response], Response],
            running: Callable[[], Response]) -> Response:
        """``action()`` once per (principal, key): its answer, or the stored one
        (``replayed(stored)``), ``conflict()`` when the key came with another request, or
        ``running()`` when the first request with the key is still running after
        :attr:`wait_s` seconds."""
        slot = (principal, key)
        while True:
            with self._lock:
                self._expire()
                entry = self._entries.get(slot)
                if entry is None:
                    entry = _Entry(request_fingerprint, self._clock())
                    self._entries[slot] = entry
                    mine = True
                else:
                    mine = False
            if mine:
                break
            if entry.fingerprint != request_fingerprint:
                return conflict()
            if not entry.done.wait(self.wait_s):
                return running()
            if entry.response is not None:
                return replayed(entry.response)
            # the first one was not finalized (5xx, or it raised): run it now, as a retry
        try:
            response = action()
        except BaseException:
            self._forget(slot, entry)
            raise
        if response.status >= 500:
            self._forget(slot, entry)
        else:
            entry.response = response
            entry.done.set()
        return response

    def _forget(self, slot: tuple[str, str], entry: _Entry) -> None:
        with self._lock:
            if self._entries.get(slot) is entry:
                del self._entries[slot]
        entry.done.set()

    def _expire(self) -> None:
        now = self._clock()
        stale = [k for k, e in self._entries.items()
                 if e.done.is_set() and now - e.started > self.lifetime_s]
        for k in stale:
            del self._entries[k]
        if len(self._entries) > self.max_keys:
            finished = [k for k, e in self._entries.items() if e.done.is_set()]
            for k in finished[:len(self._entries) - self.max_keys]:
                del self._entries[k]
