"""What a command line's ``TABLE`` argument names: a catalog's table
(``CATALOG:namespace.table``) or a path. Apart from :mod:`floe.catalog.config` (which loads
the catalog it names) so that a command on a path does not import the catalog configuration.
"""

from __future__ import annotations

import os
import re

from floe.catalog.base import TableIdentifier

__all__ = ["catalog_table_arg", "parse_table_arg"]

#: ``CATALOG:namespace.table``; a path never matches (it has ``/`` or no ``:``).
_TABLE_ARG = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*):([^/\\]+)$")


def parse_table_arg(arg: str) -> tuple[str, TableIdentifier] | None:
    """``"prod:sales.orders"`` → ``("prod", sales.orders)``; None for anything that looks
    like a path (contains ``/`` or ``\\``, or has no ``CATALOG:`` prefix)."""
    m = _TABLE_ARG.match(arg)
    if m is None or arg.startswith("file:"):
        return None
    return m.group(1), TableIdentifier.parse(m.group(2))


def catalog_table_arg(arg: str) -> tuple[str, TableIdentifier] | None:
    """:func:`parse_table_arg`, except that a path that exists is a path (a directory named
    ``c:t`` is read as a table directory)."""
    parsed = parse_table_arg(arg)
    if parsed is None or os.path.exists(arg):
        return None
    return parsed
