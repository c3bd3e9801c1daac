"""The one clock that stamps table metadata: snapshot timestamps, ``last-updated-ms`` and the
snapshot log entry of a rollback. (Ages compared with the wall clock — snapshot expiry's and
orphan removal's cut-offs — read the wall clock.)

Every timestamp floe writes into metadata comes from :func:`now_ms`, the system clock unless
a caller installed another one with :func:`use_clock` (a test that builds a history at a
fixed date, or one that sets the clock back to see how a commit from a machine whose clock
runs behind is handled). Timestamps are never trusted to be consistent: the metadata builder
(:func:`floe.metadata.check_history_order`) refuses history that goes back in time the way
Iceberg Java does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["ManualClock", "now_ms", "use_clock"]


def _system_ms() -> int:
    return int(time.time() * 1000)


_clock: ContextVar[Callable[[], int]] = ContextVar("floe_clock", default=_system_ms)


def now_ms() -> int:
    """Milliseconds since the epoch by the clock in use."""
    return _clock.get()()


@contextmanager
def use_clock(clock: Callable[[], int]) -> Iterator[None]:
    """Stamp metadata with ``clock()`` inside the block (this thread / task only)."""
    token = _clock.set(clock)
    try:
        yield
    finally:
        _clock.reset(token)


class ManualClock:
    """A clock that stands at ``ms`` until moved by :meth:`advance` or :meth:`set` (which may
    move it back, as a skewed machine's clock would)."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms

    def advance(self, ms: int) -> None:
        self.ms += ms

    def set(self, ms: int) -> None:
        self.ms = ms
