"""Table maintenance: expire snapshots, remove orphan files, compaction, rewrite manifests.

Every operation takes an ``on_progress`` callback and returns a result object. The callback
receives :class:`Progress` values (a stage, counts, and a detail line) so the command line can
draw a progress bar and the explorer's tasks can store it. It may raise :class:`Cancelled`
to stop the operation: the operation then stops at its next step, deletes the files it wrote
for anything not yet committed, and commits nothing more (what it already committed stays
committed: a compaction with partial progress keeps its finished groups).

Destructive operations have a dry-run that returns the same result object, listing exactly
what a real run would delete or rewrite; nothing is written or deleted by a dry-run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from floe.errors import FloeError

__all__ = ["Progress", "ProgressCallback", "Cancelled", "report", "no_progress", "utc_text"]


class Cancelled(FloeError):
    """Raised by a progress callback to stop a maintenance operation between steps."""


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress report: ``stage`` (e.g. ``"listing files"``), ``done`` of ``total``
    (``None`` when unknown) and a one-line ``detail``."""

    stage: str
    done: int = 0
    total: int | None = None
    detail: str = ""

    @property
    def fraction(self) -> float | None:
        """``done / total`` in 0..1, or None when the total is unknown."""
        if not self.total:
            return None if self.total is None else 1.0
        return min(1.0, self.done / self.total)


ProgressCallback = Callable[[Progress], None]


def no_progress(_: Progress) -> None:
    """The default callback: reports go nowhere."""


def report(on_progress: ProgressCallback | None, stage: str, done: int = 0,
           total: int | None = None, detail: str = "") -> None:
    """Send one report (a no-op without a callback); a :class:`Cancelled` raised by the
    callback propagates to the operation."""
    if on_progress is not None:
        on_progress(Progress(stage, done, total, detail))


def utc_text(ms: int) -> str:
    """A timestamp in ms for the sentences operations explain themselves with."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
