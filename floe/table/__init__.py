"""Tables and the ways to change them: transactions of updates and requirements, the commit
loop, snapshot production and data-file writing (see docs/core-api.md "floe.table")."""

from __future__ import annotations

from floe.table.table import Table

__all__ = ["Table"]
