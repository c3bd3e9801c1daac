"""The row filter as scan planning uses it: bound once, evaluators cached per spec id.

:class:`ScanFilter` binds the filter to the scan's schema; :meth:`ScanFilter.for_spec`
hands out one :class:`SpecFilter` per partition spec id holding the manifest (partition
summary) evaluator, the partition evaluator (the inclusive projection of the filter through
the spec, evaluated on partition tuples), the metrics evaluator and the residuals. Each
evaluator answers ``(kept, reason)``.
"""

from __future__ import annotations

from typing import Any

from floe.manifest import DataFile, ManifestFile
from floe.metadata import TableMetadata
from floe.schema import Schema

__all__ = ["ScanFilter", "SpecFilter"]

_ALL = "no filter"


class SpecFilter:
    """Evaluators of one partition spec (no filter: everything is kept)."""

    always_true = True
    #: The reason every file gets (None: decided file by file).
    uniform_reason: str | None = _ALL

    def manifest(self, m: ManifestFile) -> tuple[bool, str]:
        return True, _ALL

    #: Whether the partition evaluator reads the partition tuple (False: one answer).
    partitioned = False
    #: The bound expression the metrics evaluator decides, and whether a file without rows
    #: is pruned (:func:`floe.scan.decide.decide` runs it in bulk); None: everything kept.
    metrics_expression: Any = None
    metrics_prunes_empty = True

    def partition(self, df: DataFile) -> tuple[bool, str]:
        return True, _ALL

    def partition_of(self, partition: tuple[Any, ...]) -> tuple[bool, str]:
        return True, _ALL

    def metrics(self, df: DataFile) -> tuple[bool, str]:
        return True, _ALL

    def residual_for(self, partition: tuple[Any, ...]) -> Any:
        return None


class ScanFilter:
    """A row filter bound to a schema, with per-spec evaluators made on first use."""

    def __init__(self, md: TableMetadata, schema: Schema, row_filter: Any,
                 case_sensitive: bool = True, explain: bool = False) -> None:
        self.md = md
        self.explain = explain
        self.schema = schema
        self.case_sensitive = case_sensitive
        self.expression: Any = None
        self.bound: Any = None
        if row_filter is not None and row_filter != "":
            from floe.scan import _expr

            self.expression, self.bound = _expr.bind_filter(schema, row_filter, case_sensitive)
        self._specs: dict[int, SpecFilter] = {}

    def for_spec(self, spec_id: int) -> Any:
        got: Any = self._specs.get(spec_id)
        if got is None:
            if self.bound is None:
                got = SpecFilter()
            else:
                from floe.scan import _expr

                got = _expr.spec_filter(self.md, self.schema, spec_id, self.expression,
                                        self.bound, self.case_sensitive, self.explain)
            self._specs[spec_id] = got
        return got
