"""The catalogs the explorer browses, all of them ``floe.catalog`` catalogs.

* every catalog of the floe catalog file (``FLOE_CATALOGS``, default
  ``~/.floe/catalogs.toml`` when it exists; the file the ``floe`` command reads, parsed by
  :mod:`floe.catalog.config`): file-system and SQL catalogs;
* ``local``: a file-system catalog over ``FLOE_WAREHOUSE``, unless the file configures a
  catalog of that name (the command line's rule).

Catalog objects are created on first use and kept (a SQL catalog holds a connection pool);
a changed catalog file or warehouse setting makes a fresh set. A catalog that cannot be
created (its database is down) is :class:`explorer.errors.CatalogUnavailable` (503) and is
tried again on the next request; the others keep working.

The one confinement rule: every catalog reads files through a :class:`WarehouseIO`, which
opens a file only when its real path (symlinks resolved) is inside the catalog's warehouse,
in buckets by prefix. A REST catalog whose warehouse is not a place but a name (as Polaris and
Lakekeeper name theirs) or that has none confines each table to its own places instead: its
location, and its ``write.data.path`` / ``write.metadata.path`` when set (:func:`confine`).
Anything else, a table directory that is a symlink to elsewhere, a metadata file, manifest
list, manifest or data file named outside, is :class:`explorer.errors.OutsideWarehouse`: the
same error and the same status (422, a file the request needs cannot be read) on every page
and endpoint.
Names only (listing directories, existence checks) are not confined.

A table moved or copied without rewriting its metadata still names its files where it was
(Iceberg paths are absolute). When such a table is opened (:func:`note_moved`), its
WarehouseIO remembers the old place, and a file refused there, or gone from there, is
:class:`explorer.errors.TableMoved` (422 too), whose message says where the metadata points
instead of only "outside the warehouse". The refusal itself is the same.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import dataclasses
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from sqlalchemy.exc import SQLAlchemyError

from explorer.cache import CACHE
from explorer.errors import CatalogUnavailable, OutsideWarehouse, TableMoved
from floe import properties as table_properties
from floe.catalog.base import Catalog
from floe.catalog.config import (
    CatalogConfig,
    default_config_path,
    load_catalogs,
    pyiceberg_config_candidates,
    redact,
)
from floe.errors import CatalogUnavailable as FloeCatalogUnavailable
from floe.errors import FloeError, NotFound, StoreUnavailable, ValidationError
from floe.inspect import moved_from
from floe.io import FileInfo, FileIO, is_local, local_path
from floe.metadata import TableMetadata
from floe.table import Table

__all__ = [
    "LOCAL_CATALOG",
    "CatalogInfo",
    "WarehouseIO",
    "catalog_call",
    "catalog_get",
    "catalog_storage_properties",
    "catalog_info",
    "catalog_infos",
    "catalog_names",
    "check_configuration",
    "close_catalogs",
    "confine",
    "note_moved",
    "table_moved",
]

logger = logging.getLogger(__name__)

LOCAL_CATALOG = "local"


# --- confinement ------------------------------------------------------------------------------


def _real_root(warehouse: str | None) -> str | None:
    if not warehouse:
        return None
    try:
        return os.path.realpath(local_path(warehouse))
    except ValidationError:  # s3:// and friends: nothing local to confine to
        return None


def _object_prefix(location: str | None) -> str | None:
    """An object-store location as ``s3://bucket/a/b/`` (``s3a``/``s3n`` as ``s3``, ``.``
    and ``..`` segments resolved, one slash between segments), or None when it is local."""
    if not location or is_local(location):
        return None
    scheme, _, rest = location.partition("://")
    scheme = "s3" if scheme.lower() in ("s3a", "s3n") else scheme.lower()
    parts: list[str] = []
    for part in rest.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if len(parts) > 1:
                parts.pop()
            continue
        parts.append(part)
    return f"{scheme}://" + "/".join(parts) + "/"


def _place(location: str) -> str | None:
    """A place files are read from, normalized to compare (:func:`_inside`): an object-store
    prefix, or a local directory with symlinks resolved; None for what is neither."""
    prefix = _object_prefix(location)
    if prefix is not None:
        return prefix
    try:
        return os.path.realpath(local_path(location))
    except ValidationError:
        return None


def _inside(location: str, place: str) -> bool:
    """Whether ``location`` (resolved as :func:`_place` does) is inside ``place``."""
    if "://" in place:
        return (_object_prefix(location) or "").startswith(place)
    try:
        real = os.path.realpath(local_path(location))
    except ValidationError:
        return False
    return os.path.commonpath([place, real]) == place


#: The table properties that put a table's files elsewhere than under its location (Java's
#: location providers: ``write.object-storage.path`` and ``write.folder-storage.path`` are the
#: older names of ``write.data.path``).
TABLE_PLACE_PROPERTIES = (table_properties.DATA_PATH, table_properties.METADATA_PATH,
                          "write.object-storage.path", "write.folder-storage.path")


def table_places(metadata: TableMetadata) -> tuple[str, ...]:
    """Where a table's files may be: its location and the paths its properties name."""
    named = [metadata.location] + [metadata.properties[k] for k in TABLE_PLACE_PROPERTIES
                                   if metadata.properties.get(k)]
    return tuple(dict.fromkeys(p for p in (_place(n) for n in named if n) if p))


def warehouse_is_place(warehouse: str | None) -> bool:
    """Whether a catalog's ``warehouse`` names a place (a path, a ``file:`` or object-store
    URI), not a name a REST catalog knows its warehouse by (Polaris, Lakekeeper)."""
    return bool(warehouse) and ("://" in str(warehouse) or str(warehouse).startswith("file:")
                                or os.path.isabs(str(warehouse)))


class WarehouseIO(FileIO):
    """A :class:`~floe.io.FileIO` that reads and writes only inside one warehouse, symlinks
    resolved; with ``per_table`` (a REST catalog whose warehouse is a name) only inside one
    table's places (:meth:`for_table`). Existence checks and listings pass through (they
    reveal names, not content)."""

    def __init__(self, catalog: str, warehouse: str | None,
                 properties: Mapping[str, str] | None = None, *,
                 per_table: bool = False) -> None:
        super().__init__(properties)
        self.catalog = catalog
        self.warehouse = warehouse
        self.per_table = per_table
        self.root = None if per_table else _real_root(warehouse)
        #: An object-store warehouse (``s3://bucket/prefix``), as a normalized prefix.
        self.prefix = None if per_table else _object_prefix(warehouse)
        #: per_table: the places of the one table this FileIO reads (:meth:`for_table`);
        #: None on the catalog's own FileIO.
        self.table_places: tuple[str, ...] | None = None
        #: per_table: the places of every table opened, which the catalog's own FileIO reads
        #: (a table's next metadata file, when it is refreshed after a commit). Shared by
        #: every FileIO made from this one.
        self.known_places: set[str] = set()
        #: Where tables opened from this catalog were (their metadata's location, as a path)
        #: → where they are now (explorer.catalogs.note_moved).
        self.moved: dict[str, str] = {}

    def for_table(self, metadata: TableMetadata) -> WarehouseIO:
        """per_table: this FileIO (its storage configuration, its clients) confined to the
        places of the table ``metadata`` describes, which the catalog's own FileIO may read
        from then on; otherwise this FileIO itself."""
        if not self.per_table:
            return self
        places = table_places(metadata)
        self.known_places.update(places)
        confined = copy.copy(self)  # shares the clients, the known places, the moved tables
        confined.table_places = places
        return confined

    def _moved(self, location: str, problem: str) -> TableMoved | None:
        """TableMoved for a file under a moved table's old place, else None."""
        try:
            path = local_path(location)
        except ValidationError:
            path = location
        for old, new in list(self.moved.items()):
            if path.startswith(old + "/"):
                return TableMoved(location, (
                    f"this table's metadata points to {old}: it was moved or copied to {new} "
                    "without rewriting its metadata, which names every file by its absolute "
                    f"path; {problem}"))
        return None

    def check(self, location: str) -> None:
        """OutsideWarehouse unless ``location`` (resolved) is inside the warehouse, or per
        table inside the table's places (TableMoved when it is under the old place of a
        moved table)."""
        if self.per_table:
            self._check_table(location)
            return
        if self.root is None and self.prefix is None:
            raise OutsideWarehouse(
                location, f"catalog {self.catalog!r} has no warehouse, and the explorer reads "
                "only inside a catalog's warehouse; not read")
        if self.prefix is not None:
            inside = (_object_prefix(location) or "").startswith(self.prefix)
        else:
            try:
                real: str | None = os.path.realpath(local_path(location))
            except ValidationError:
                real = None
            inside = real is not None and os.path.commonpath([self.root or "/", real]) == \
                self.root
        if not inside:
            moved = self._moved(location, f"that place is not in the warehouse "
                                          f"{self.warehouse} of catalog {self.catalog!r} "
                                          "(symlinks resolved), so nothing is read from it")
            if moved is not None:
                raise moved
            raise OutsideWarehouse(
                location, f"outside the warehouse {self.warehouse} of catalog "
                f"{self.catalog!r} (symlinks resolved); not read")

    def _check_table(self, location: str) -> None:
        places = self.table_places
        if places is None:  # the catalog's own FileIO: any table's places
            places = tuple(self.known_places)
        if any(_inside(location, p) for p in places):
            return
        named = ("of the tables opened" if self.table_places is None
                 else f"of the table ({', '.join(places)})")
        why = (f"outside the places {named} in catalog {self.catalog!r}, whose warehouse is "
               "not a place: the explorer reads a table's files only inside its location and "
               "its write.data.path / write.metadata.path")
        moved = self._moved(location, why + ", so nothing is read from it")
        if moved is not None:
            raise moved
        raise OutsideWarehouse(location, f"{why}; not read")

    def guard(self, location: str) -> None:
        """Every read and write of content, and floe's caches before a lookup: the one
        refusal (floe.io.FileIO.guard)."""
        self.check(location)

    def read(self, location: str) -> bytes:
        with self._gone(location):
            return super().read(location)

    def open(self, location: str) -> BinaryIO:
        with self._gone(location):
            return super().open(location)

    def size(self, location: str) -> int:
        with self._gone(location):
            return super().size(location)

    def read_range(self, location: str, start: int, length: int) -> bytes:
        with self._unavailable():
            return super().read_range(location, start, length)

    def info(self, location: str) -> FileInfo | None:
        with self._unavailable():
            return super().info(location)

    def identity(self, location: str) -> str | None:
        with self._unavailable():
            return super().identity(location)

    def exists(self, location: str) -> bool:
        with self._unavailable():
            return super().exists(location)

    def is_dir(self, location: str) -> bool:
        with self._unavailable():
            return super().is_dir(location)

    def list(self, prefix: str) -> builtins.list[str]:
        with self._unavailable():
            return super().list(prefix)

    def list_info(self, prefix: str) -> Iterator[FileInfo]:
        with self._unavailable():
            yield from super().list_info(prefix)

    def list_dir(self, prefix: str) -> tuple[builtins.list[str], builtins.list[str]]:
        with self._unavailable():
            return super().list_dir(prefix)

    def write(self, location: str, data: bytes, overwrite: bool = False) -> None:
        with self._unavailable():
            super().write(location, data, overwrite)

    @contextlib.contextmanager
    def _unavailable(self) -> Iterator[None]:
        """The store failing (refusing the catalog's credentials, not answering:
        floe.errors.StoreUnavailable, naming the location) is this catalog being unavailable
        (503 on its pages only), and says which catalog. A missing file, bad content or an
        unknown outcome pass unchanged."""
        try:
            yield
        except StoreUnavailable as exc:
            raise CatalogUnavailable(f"catalog {self.catalog!r} is unavailable: "
                                     f"{redact(str(exc))}") from None

    @contextlib.contextmanager
    def _gone(self, location: str) -> Iterator[None]:
        """A file missing from a moved table's old place says where the metadata points."""
        try:
            with self._unavailable():
                yield
        except NotFound:
            raise self._moved(location, "the file is no longer there") or NotFound(
                f"{location}: file does not exist") from None


# --- the configured catalogs ------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]


@dataclass(frozen=True, slots=True)
class CatalogInfo:
    """What the pages and the API say about a catalog, known without connecting to it."""

    name: str
    type: str
    warehouse: str | None
    #: Why the catalog cannot be used (its entry in the configuration is broken), else None.
    problem: str | None = None

    @property
    def exists(self) -> bool:
        """Whether the warehouse directory exists (a file-system catalog without it is empty);
        a warehouse in a bucket, or a REST catalog's, is taken to (its listing says what is
        there)."""
        if self.type == "rest" or (self.warehouse and not is_local(self.warehouse)):
            return True
        root = _real_root(self.warehouse)
        return root is not None and os.path.isdir(root)


def _config_file() -> Path:
    return Path(settings.FLOE_CATALOGS) if settings.FLOE_CATALOGS else default_config_path()


def _file_version(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)


def _config_key() -> tuple[object, ...]:
    """Changes whenever the catalogs would: the file (path, size, mtime), the warehouse, and
    PyIceberg's configuration (the .pyiceberg.yaml files it looks at, PYICEBERG_ variables)."""
    path = _config_file()
    pyiceberg = [(str(p), _file_version(p)) for p in pyiceberg_config_candidates()]
    # the names alone, then the values of the few that match (asked on every request: items()
    # would decode every value of the environment)
    variables = sorted((k, os.environ[k]) for k in os.environ
                       if k[:10].lower() == "pyiceberg_")
    return (settings.FLOE_CATALOGS, str(path), _file_version(path), settings.FLOE_WAREHOUSE,
            tuple(pyiceberg), tuple(variables), settings.FLOE_CATALOG_TIMEOUT,
            settings.FLOE_CATALOG_RETRIES)


class _Registry:
    """The catalogs of one configuration; catalog objects are created on first use."""

    def __init__(self, key: tuple[object, ...], configs: dict[str, CatalogConfig]) -> None:
        self.key = key
        self.configs = configs
        self.catalogs: dict[str, Catalog] = {}
        self.lock = threading.Lock()

    def get(self, name: str) -> Catalog:
        config = self.configs.get(name)
        if config is None:
            raise NotFound(f"catalog {name!r} does not exist")
        if config.problem is not None:  # a broken entry: this catalog only
            raise CatalogUnavailable(f"catalog {name!r} cannot be used: {config.problem}")
        with self.lock:
            catalog = self.catalogs.get(name)
        if catalog is not None:
            return catalog
        # Connect outside the lock: a database that does not answer must not hold up the
        # requests for the other catalogs.
        warehouse = config.options.get("warehouse")
        io = WarehouseIO(name, warehouse, config.storage_properties,
                         per_table=config.type == "rest" and not warehouse_is_place(warehouse))
        if config.type == "rest":  # a server that does not answer fails a page in bounded time
            config = dataclasses.replace(config, options={**_rest_limits(), **config.options})
        try:
            created = config.create(io)
        except FloeCatalogUnavailable as exc:  # one line naming the catalog, no secret
            raise CatalogUnavailable(str(exc)) from None
        except (FloeError, SQLAlchemyError, OSError) as exc:
            raise CatalogUnavailable(
                f"catalog {name!r} ({config.type}, from {config.source}) is unavailable: "
                f"{_one_line(redact(str(exc), config.options))}") from None
        with self.lock:
            catalog = self.catalogs.setdefault(name, created)
        if catalog is not created:  # another request created it meanwhile
            created.close()
        return catalog

    def close(self) -> None:
        with self.lock:
            for catalog in self.catalogs.values():
                with contextlib.suppress(Exception):  # closing must not fail a request
                    catalog.close()
            self.catalogs.clear()


def _rest_limits() -> dict[str, str]:
    """The time limits of a REST catalog's requests unless its entry sets its own:
    ``FLOE_CATALOG_TIMEOUT`` seconds to connect and for each read of an answer, asked
    ``FLOE_CATALOG_RETRIES`` more times when it changes nothing (floe.catalog.rest's options;
    its own defaults, a minute and four, are a command's)."""
    return {
        "rest.client.connection-timeout-ms": str(int(settings.FLOE_CATALOG_TIMEOUT * 1000)),
        "rest.client.socket-timeout-ms": str(int(settings.FLOE_CATALOG_TIMEOUT * 1000)),
        "rest.client.max-retries": str(settings.FLOE_CATALOG_RETRIES),
    }


_registry: _Registry | None = None
_registry_lock = threading.Lock()


def _current() -> _Registry:
    global _registry
    key = _config_key()
    registry = _registry
    if registry is not None and registry.key == key:
        return registry
    with _registry_lock:
        if _registry is not None and _registry.key == key:
            return _registry
        file = settings.FLOE_CATALOGS or None
        try:
            configs = load_catalogs(file, warehouse=settings.FLOE_WAREHOUSE)
        except FloeError as exc:
            raise CatalogUnavailable(
                f"the catalog file cannot be used: {redact(str(exc))}") from None
        for problem in configs.problems:
            logger.warning("catalog configuration not read: %s", problem)
        for config in configs.values():
            if config.problem is not None:
                logger.warning("%s", config.problem)
        old, _registry = _registry, _Registry(key, configs)
    if old is not None:
        old.close()
        CACHE.clear()  # cached tables hold the old catalog objects
    return _registry


def catalog_names() -> list[str]:
    """The configured catalog names, ``local`` first."""
    return sorted(_current().configs, key=lambda n: (n != LOCAL_CATALOG, n))


def catalog_infos() -> list[CatalogInfo]:
    configs = _current().configs
    return [_info(configs[n]) for n in catalog_names()]


def catalog_info(name: str) -> CatalogInfo:
    config = _current().configs.get(name)
    if config is None:
        raise NotFound(f"catalog {name!r} does not exist")
    return _info(config)


def _info(config: CatalogConfig) -> CatalogInfo:
    return CatalogInfo(config.name, config.type, config.options.get("warehouse"),
                       config.problem)


def catalog_storage_properties(name: str) -> dict[str, str]:
    """The storage properties (``s3.*``, ``gcs.*``, ``adls.*``) of a configured catalog
    (NotFound when none is called ``name``); never shown, only handed to clients the
    operator allows (the Iceberg REST catalog's vended config)."""
    config = _current().configs.get(name)
    if config is None:
        raise NotFound(f"catalog {name!r} does not exist")
    return config.storage_properties


def catalog_get(name: str) -> Catalog:
    """The catalog object called ``name`` (NotFound when none is configured)."""
    return _current().get(name)


def close_catalogs() -> None:
    """Close every catalog created so far (they are created again when next used)."""
    registry = _registry
    if registry is not None:
        registry.close()


def table_moved(table: Table) -> dict[str, str] | None:
    """Where the table's metadata points when the table is no longer there
    (floe.inspect.moved_from): ``{"from": old location, "to": its directory now, "state":
    "outside" (not in the warehouse: not read), "gone" (nothing there any more) or "there"
    (the files are read from the old place)}``; None for a table where it says it is."""
    old = moved_from(table.metadata, table.metadata_location)
    if old is None:
        return None
    new = table.metadata_location.rsplit("/", 2)[0]
    io = table.catalog.io
    state = "there"
    try:
        if isinstance(io, WarehouseIO):
            io.check(old)
        if not os.path.isdir(local_path(old)):
            state = "gone"
    except (OutsideWarehouse, TableMoved):
        state = "outside"
    except ValidationError:  # not a local path: say nothing about whether it is there
        pass
    return {"from": old, "to": new, "state": state}


def confine(table: Table) -> Table:
    """The table reading through a FileIO confined to its own places when its catalog
    confines per table (a REST catalog whose warehouse is a name); else the table itself."""
    io = table.io
    if not isinstance(io, WarehouseIO) or not io.per_table:
        return table
    return Table(table.catalog, table.identifier, table.metadata, table.metadata_location,
                 io.for_table(table.metadata))


def note_moved(table: Table) -> None:
    """Remember a table's old place in its catalog's WarehouseIO when it was moved, so that
    what is refused or missing there says why (explorer.errors.TableMoved)."""
    io = table.catalog.io
    old = moved_from(table.metadata, table.metadata_location)
    if old is None or not isinstance(io, WarehouseIO):
        return
    try:
        key = local_path(old).rstrip("/")
    except ValidationError:
        key = old.rstrip("/")
    io.moved[key] = table.metadata_location.rsplit("/", 2)[0]


@contextlib.contextmanager
def catalog_call(catalog: Catalog) -> Iterator[None]:
    """Around a call to a catalog: its database failing, or its server answering what no
    catalog answers (a plain FloeError of floe.catalog.rest: a page that is not JSON, a
    refusal of the request), is CatalogUnavailable, not a 500."""
    try:
        yield
    except SQLAlchemyError as exc:
        why = _one_line(redact(str(getattr(exc, "orig", None) or exc)))
        logger.warning("catalog %s: %s", catalog.name, why)
        raise CatalogUnavailable(f"catalog {catalog.name!r} is unavailable: {why}") from None
    except FloeError as exc:
        if type(exc) is not FloeError:  # not found, bad input, a bad file...: as they are
            raise
        why = _one_line(redact(str(exc)))
        logger.warning("catalog %s: %s", catalog.name, why)
        raise CatalogUnavailable(f"catalog {catalog.name!r} is unavailable: "
                                 f"{why.removeprefix(f'catalog {catalog.name!r}: ')}") from None


def check_configuration() -> list[CatalogInfo]:
    """The configured catalogs, read now (for ``explorer.run``: a catalog file that does not
    parse stops the process at start, naming the file; a broken entry is listed with its
    problem, and only its catalog is unusable)."""
    return catalog_infos()
