"""Catalogs: how a table name or path becomes the location of its current metadata file.

Only the file-system layout is implemented so far (:mod:`floe.catalog.filesystem`).
"""

from __future__ import annotations

from floe.catalog.filesystem import load_table_metadata, resolve_metadata_location

__all__ = ["load_table_metadata", "resolve_metadata_location"]
