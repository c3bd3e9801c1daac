"""FileIO: table files by location, wherever they are (spec "File IO").

A location's scheme picks the store: plain paths and ``file:`` URIs the local file system
(:mod:`floe.io.local`), ``s3://`` / ``s3a://`` / ``s3n://``, ``gs://`` and ``abfs(s)://`` /
``wasb(s)://`` an object store (:mod:`floe.io.objectstore`), configured from PyIceberg's
property names (``s3.endpoint``, ``s3.access-key-id``, ``gcs.*``, ``adls.*``: a catalog's
properties, the storage config a REST catalog sends) with each cloud's own credential chain
behind them. Also here: the file formats (:mod:`floe.io.parquet`, :mod:`floe.io.orc`).
Nothing else: floe.io imports no planning, table or catalog module.

Every read of content goes through :meth:`FileIO.guard` first; a subclass that confines
reads (the explorer's warehouse) overrides that one method.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Iterator, Mapping
from collections import deque
from typing import BinaryIO

from floe.errors import ValidationError
from floe.io.local import LocalStore, local_path
from floe.io.store import FileInfo, Store

__all__ = ["FileIO", "FileInfo", "is_local", "local_path", "scheme_of"]

#: Reads of many files (the manifests of a plan) run this many at once on an object store.
PARALLEL_READS = 16

_LOCAL = LocalStore()


def scheme_of(location: str) -> str:
    """``s3`` for ``s3://b/k``; ``file`` for plain paths and ``file:`` URIs."""
    scheme, sep, _ = location.partition("://")
    if sep and scheme.isalnum() and len(scheme) > 1:
        return scheme.lower()
    return "file"


def is_local(location: str) -> bool:
    return scheme_of(location) == "file"


class FileIO:
    """Reads and writes files by location (see the module docstring). ``properties``: the
    storage configuration (PyIceberg's names); none means each cloud's defaults."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.properties: dict[str, str] = dict(properties or {})
        self._stores: dict[str, Store] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        """Pickled (to a Spark executor, a worker process) without its clients: the other
        process makes its own from the same properties."""
        state = dict(self.__dict__)
        state["_stores"], state["_lock"] = {}, None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def with_properties(self, properties: Mapping[str, str]) -> FileIO:
        """This FileIO's configuration with ``properties`` on top (a REST catalog's storage
        config for one table), as a FileIO of the same kind."""
        if not properties or all(self.properties.get(k) == v for k, v in properties.items()):
            return self
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.properties = {**self.properties, **properties}
        clone._stores = {}
        clone._lock = threading.Lock()
        return clone

    def store(self, location: str) -> Store:
        """The store holding ``location`` (ValidationError for a scheme floe cannot read)."""
        scheme = scheme_of(location)
        if scheme == "file":
            return _LOCAL
        from floe.io.objectstore import AZURE_SCHEMES, GCS_SCHEMES, S3_SCHEMES, ObjectStore

        kind = ("s3" if scheme in S3_SCHEMES else "gcs" if scheme in GCS_SCHEMES
                else "azure" if scheme in AZURE_SCHEMES else None)
        if kind is None:
            raise ValidationError(
                f"{location}: the {scheme!r} scheme is not supported (floe reads local paths, "
                "file:, s3://, s3a://, s3n://, gs://, abfs://, abfss://, wasb:// and wasbs://)")
        with self._lock:
            store = self._stores.get(kind)
            if store is None:
                store = self._stores[kind] = ObjectStore(kind, self.properties)
        return store

    # -- reads (guarded) ---------------------------------------------------------------------

    def guard(self, location: str) -> None:
        """Raise when this FileIO may not read ``location`` (a plain FileIO reads anything;
        the explorer's confines reads to a warehouse). Every read of content calls it, and
        so does every cache of what files hold before a lookup, so a copy cached for another
        reader is never a way around it."""

    def read(self, location: str) -> bytes:
        """The whole file; NotFound when it does not exist."""
        self.guard(location)
        return self.store(location).read(location)

    def read_range(self, location: str, start: int, length: int) -> bytes:
        self.guard(location)
        return self.store(location).read_range(location, start, length)

    def read_many(self, locations: Iterable[str]) -> Iterator[bytes]:
        """The files in order, fetched up to :data:`PARALLEL_READS` at a time from an object
        store (one by one locally); at most twice that many are held unread."""
        locations = list(locations)
        if not locations or all(is_local(x) for x in locations):
            yield from (self.read(x) for x in locations)
            return
        from concurrent.futures import Future, ThreadPoolExecutor  # not for local files

        with ThreadPoolExecutor(PARALLEL_READS) as pool:
            window: deque[Future[bytes]] = deque()
            pending = iter(locations)
            for location in pending:
                window.append(pool.submit(self.read, location))
                if len(window) >= 2 * PARALLEL_READS:
                    break
            while window:
                done = window.popleft().result()
                nxt = next(pending, None)
                if nxt is not None:
                    window.append(pool.submit(self.read, nxt))
                yield done

    def open(self, location: str) -> BinaryIO:
        """A readable, seekable binary file object; NotFound when the file does not exist."""
        self.guard(location)
        return self.store(location).open(location)

    def info(self, location: str) -> FileInfo | None:
        """Size, modification time and version of the file, or None when there is none."""
        self.guard(location)
        return self.store(location).head(location)

    def size(self, location: str) -> int:
        from floe.errors import NotFound

        found = self.info(location)
        if found is None:
            raise NotFound(f"{location}: file does not exist")
        return found.size

    def identity(self, location: str) -> str | None:
        """What tells this file from another one written at the same location later (an
        ETag, or a local file's size and modification time), for caches keyed by location:
        a file-system table dropped and created again reuses its metadata file names. None
        when there is no file."""
        found = self.store(location).head(location)
        return None if found is None else f"{found.size}:{found.version}"

    # -- names (not guarded: they reveal names, not content) -----------------------------------

    def exists(self, location: str) -> bool:
        return self.store(location).exists(location)

    def is_dir(self, location: str) -> bool:
        return self.store(location).is_dir(location)

    def list(self, prefix: str) -> builtins.list[str]:
        """Every file under a directory (recursively), sorted; [] when there is none."""
        return [f.location for f in self.store(prefix).list(prefix)]

    def list_info(self, prefix: str) -> Iterator[FileInfo]:
        """:meth:`list` with each file's size and modification time."""
        return self.store(prefix).list(prefix)

    def list_dir(self, prefix: str) -> tuple[builtins.list[str], builtins.list[str]]:
        """The directories and files directly under ``prefix``, sorted."""
        return self.store(prefix).list_dir(prefix)

    # -- writes (guarded) --------------------------------------------------------------------

    def exclusive_create(self, location: str) -> bool:
        """Whether :meth:`write` without ``overwrite`` refuses atomically when the file
        exists (a local disk; an object store that honours ``If-None-Match: *``, found out
        once per bucket). A file-system table commits only where it does."""
        store = self.store(location)
        probe = getattr(store, "exclusive_for", None)
        return bool(probe(location)) if probe is not None else store.exclusive_create

    def write(self, location: str, data: bytes, overwrite: bool = False) -> None:
        """Write ``data`` atomically (readers see the old file or the whole new one).
        Without ``overwrite`` an existing file is a FileExistsError; where
        :meth:`exclusive_create` holds, also when another writer creates it at the same
        moment. OutcomeUnknown when the answer was lost and the file cannot tell."""
        self.guard(location)
        self.store(location).write(location, data, overwrite)

    def delete(self, location: str, missing_ok: bool = False) -> None:
        """Delete a file; NotFound when it is missing unless ``missing_ok``."""
        self.guard(location)
        self.store(location).delete(location, missing_ok)

    def delete_many(self, locations: Iterable[str]) -> builtins.list[tuple[str, Exception]]:
        """Delete files (missing ones are fine) in the store's batches; returns the ones
        that could not be deleted, with why."""
        by_store: dict[int, tuple[Store, builtins.list[str]]] = {}
        for location in locations:
            self.guard(location)
            store = self.store(location)
            by_store.setdefault(id(store), (store, []))[1].append(location)
        failed: builtins.list[tuple[str, Exception]] = []
        for store, batch in by_store.values():
            failed += store.delete_many(batch)
        return failed
