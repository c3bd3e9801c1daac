"""Building many objects at once (decoding manifests, planning, reading the manifest cache)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector.

    Decoding and planning allocate millions of small, long-lived, acyclic objects and free
    almost nothing; the collector would re-scan the growing heap (and the manifest cache)
    over and over, which costs more than the work itself (a third of the decoding time of a
    large manifest; seconds for a million scan tasks). Reference counting still frees
    garbage."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
