"""How the ``floe`` commands open the table their ``TABLE`` argument names.

``TABLE`` is a table directory, a ``*.metadata.json`` file, or ``CATALOG:namespace.table``
for a catalog configured in ``FLOE_CATALOGS`` / ``~/.floe/catalogs.toml``
(see :mod:`floe.catalog.config`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from floe.catalog.base import Catalog, TableIdentifier
from floe.catalog.filesystem import DirectoryCatalog, directory_table, load_table_metadata
from floe.catalog.table_arg import catalog_table_arg
from floe.errors import CommitConflict, FloeError, NotFound, ValidationError
from floe.io import FileIO
from floe.metadata import TableMetadata
from floe.table import Table

__all__ = ["TABLE_HELP", "load_table_state", "open_table", "open_catalog_for_create",
           "ProgressBar"]

TABLE_HELP = "table directory, *.metadata.json file, or CATALOG:namespace.table"


def resolve_catalog_table(arg: str) -> tuple[Catalog, TableIdentifier] | None:
    """:func:`floe.catalog.config.resolve_catalog_table`, imported only when ``arg`` names a
    catalog's table (the catalog configuration's module takes a few ms to import)."""
    if catalog_table_arg(arg) is None:
        return None  # a path
    from floe.catalog.config import resolve_catalog_table as resolve

    return resolve(arg)


@contextmanager
def _in_catalog(catalog: Catalog) -> Iterator[None]:
    """A failure of the catalog's store or server names the catalog, whose configuration
    holds the credentials and endpoints (``catalog 'prod': s3://…: access denied …``).
    Errors about the request itself (not found, bad input, a conflict) pass unchanged."""
    try:
        yield
    except (NotFound, ValidationError, CommitConflict):
        raise
    except FloeError as exc:
        if f"catalog {catalog.name!r}" in str(exc):
            raise
        raise FloeError(f"catalog {catalog.name!r}: {exc}") from exc


def load_table_state(arg: str) -> tuple[FileIO, str, TableMetadata]:
    """(io, metadata location, metadata) of the table ``arg`` names, for reading."""
    resolved = resolve_catalog_table(arg)
    if resolved is None:
        io = FileIO()
        location, md = load_table_metadata(io, arg)
        return io, location, md
    catalog, ident = resolved
    try:
        with _in_catalog(catalog):
            table = catalog.load_table(ident)
        return table.io, table.metadata_location, table.metadata
    finally:
        catalog.close()


@contextmanager
def open_table(arg: str) -> Iterator[Table]:
    """The table ``arg`` names, committing through its catalog while the block runs."""
    resolved = resolve_catalog_table(arg)
    if resolved is None:
        yield directory_table(arg, FileIO())
        return
    catalog, ident = resolved
    try:
        with _in_catalog(catalog):
            yield catalog.load_table(ident)
    finally:
        catalog.close()


@contextmanager
def open_catalog_for_create(arg: str) -> Iterator[tuple[Catalog, TableIdentifier]]:
    """The catalog and identifier under which ``floe create`` makes a new table."""
    resolved = resolve_catalog_table(arg)
    if resolved is None:
        catalog = DirectoryCatalog(arg, FileIO())
        yield catalog, catalog.identifier
        return
    catalog_, ident = resolved
    try:
        with _in_catalog(catalog_):
            yield catalog_, ident
    finally:
        catalog_.close()


class ProgressBar:
    """A one-line progress bar on a terminal's stderr for maintenance commands' ``on_progress``
    reports (quiet when stderr is not a terminal, and with ``--json``)."""

    WIDTH = 30

    def __init__(self, stream: Any = None, enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._last = ""

    def __call__(self, p: Any) -> None:
        if not self.enabled:
            return
        frac = p.fraction
        if frac is None:
            bar = f"{p.stage} ... {p.done:,}" if p.done else f"{p.stage} ..."
        else:
            filled = int(frac * self.WIDTH)
            bar = (f"{p.stage} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                   f"{frac * 100:3.0f}% {p.done:,}/{p.total:,}")
        if p.detail:
            bar += f"  {p.detail}"
        line = bar[:120]
        self.stream.write("\r" + line + " " * max(0, len(self._last) - len(line)))
        self.stream.flush()
        self._last = line

    def close(self) -> None:
        if self.enabled and self._last:
            self.stream.write("\r" + " " * len(self._last) + "\r")
            self.stream.flush()
            self._last = ""
