"""Building many objects at once (decoding manifests, planning, reading the manifest cache):
the cyclic collector paused while they are built, and sequences built on first read."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar, overload

__all__ = ["gc_paused", "LazyList", "sequence_eq"]


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


T = TypeVar("T")


class LazyList(Sequence[T]):
    """A sequence whose items are built all at once on first read, from a compact source
    that is let go then; its length is known without building. Subclasses say how
    (:meth:`_build`). Shared between threads safely: the items are set before the source is
    let go, so a reader that finds no source finds the items."""

    __slots__ = ("_source", "_len", "_items")

    def __init__(self, source: Any, length: int) -> None:
        self._source: Any = source
        self._len = length
        self._items: list[T] | None = None

    def _build(self, source: Any) -> list[T]:
        raise NotImplementedError

    def items(self) -> list[T]:
        """The items (built on the first call, with the cyclic collector paused)."""
        got = self._items
        if got is None:
            source = self._source
            if source is None:  # built by another thread meanwhile
                got = self._items
                assert got is not None
                return got
            with gc_paused():
                got = self._items = self._build(source)
            self._source = None
        return got

    @property
    def source(self) -> Any:
        """What the items are built from, while they are not (None once they are)."""
        return self._source

    @property
    def built(self) -> bool:
        return self._items is not None

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        return self.items()[i]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items())

    def __eq__(self, other: object) -> bool:
        return sequence_eq(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._len} items{'' if self.built else ', unbuilt'})"


def sequence_eq(a: Sequence[Any], b: object) -> bool:
    """``a == b`` for a sequence that reads like a list: equal to any list, tuple or sequence
    with the same items in the same order."""
    if not isinstance(b, Sequence) or isinstance(b, (str, bytes)):
        return NotImplemented
    return len(a) == len(b) and list(a) == list(b)
