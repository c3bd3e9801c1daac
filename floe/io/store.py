"""What :class:`floe.io.FileIO` asks of a place that holds files: the local file system
(:mod:`floe.io.local`) or an object store (:mod:`floe.io.objectstore`).

Keys are full locations (``/a/b``, ``file:/a/b``, ``s3://bucket/a/b``). Errors: NotFound for a
missing file, FileExistsError when a create-only write finds the file there, floe errors
naming the location for the rest (never a credential).
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

__all__ = ["FileInfo", "Store"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    """A file as a listing or a HEAD request sees it. ``version`` tells this file from
    another written at the same location later (an ETag, or the modification time)."""

    location: str
    size: int
    modified_ms: int | None = None
    version: str | None = None


class Store(ABC):
    #: Whether a create-only write is refused atomically when the file exists (a hard link
    #: on a local disk, ``If-None-Match: *`` on an object store that honours it): what a
    #: file-system table's commit needs.
    exclusive_create: bool = False

    @abstractmethod
    def open(self, location: str) -> BinaryIO:
        """A readable, seekable binary file."""

    @abstractmethod
    def read(self, location: str) -> bytes: ...

    @abstractmethod
    def read_range(self, location: str, start: int, length: int) -> bytes: ...

    @abstractmethod
    def head(self, location: str) -> FileInfo | None:
        """The file, or None when there is none."""

    @abstractmethod
    def exists(self, location: str) -> bool:
        """A file or a directory (a prefix with files under it) is there."""

    @abstractmethod
    def is_dir(self, location: str) -> bool: ...

    @abstractmethod
    def write(self, location: str, data: bytes, overwrite: bool) -> None:
        """Readers see no file or the whole file; without ``overwrite`` an existing file is
        a FileExistsError (atomically only where :attr:`exclusive_create`)."""

    @abstractmethod
    def delete(self, location: str, missing_ok: bool) -> None: ...

    @abstractmethod
    def delete_many(self, locations: Iterable[str]) -> list[tuple[str, Exception]]:
        """Delete files (missing ones are fine), in batches where the store has them; the
        ones that could not be deleted, with why."""

    @abstractmethod
    def list(self, prefix: str) -> Iterator[FileInfo]:
        """Every file under the directory ``prefix``, recursively, sorted by location."""

    @abstractmethod
    def list_dir(self, prefix: str) -> tuple[builtins.list[str], builtins.list[str]]:
        """The directories and the files directly under ``prefix`` (locations, sorted)."""
