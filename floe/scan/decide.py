"""Scan-planning decisions over the columns of a manifest's entries, in bulk.

A manifest decoded natively (:mod:`floe.scan.native`) or read from the persistent cache is
an Arrow table (:class:`~floe.scan.manifest_store.StoredEntries`). Planning decides each of
its files by its partition, then by its column metrics; here both run over the columns, and
only the files a plan keeps (or a caller reads the decision of) become Python objects:

* **partition**: the partition evaluator is a function of the partition tuple alone, so it
  runs once per distinct tuple — with its explanation — and Arrow spreads the answers to the
  rows;
* **metrics**: the inclusive metrics evaluator's rules (:mod:`floe.expressions.metrics`)
  over Arrow arrays of the counts and bounds of the filter's columns (read from the stats
  maps' Avro bytes by the C extension), in three values: a file is kept, pruned, or left
  undecided where the columns do not serve (a type or predicate not done in bulk, a bound
  of another width, bytes the extension refuses). Undecided files go to the scalar
  evaluator, the reference; ``And`` / ``Or`` combine in Kleene's logic, which is exactly
  "pruned when one side of an AND prunes" and "kept when one side of an OR keeps".

The decisions equal the scalar evaluators' file by file (tests/floe/test_bulk_decisions.py
checks it on random files and filters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from floe.expressions.base import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BooleanExpression,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    Or,
    Predicate,
    walk_predicates,
)
from floe.manifest import DataFile, FileContent, FileFormat, ManifestEntry
from floe.scan.explain import ColumnarFiles, FileDecision
from floe.scan.manifest_store import StoredEntries
from floe.types import (
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampNanoType,
    TimestamptzNanoType,
    TimestamptzType,
    TimestampType,
    TimeType,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Decisions", "DecidedFiles", "decide"]


class Decisions:
    """A manifest's files decided: ``stage`` of each (None kept, "partition" or "metrics"
    pruned); ``kept`` the row numbers of the kept files and ``built`` their entries, in
    order; ``partition_reason(i)`` the partition evaluator's explanation of row ``i``."""

    __slots__ = ("n", "after_partition", "kept", "built", "_group", "_reasons", "_stages",
                 "stats")

    def __init__(self, n: int, after_partition: int, kept: list[int],
                 built: list[ManifestEntry], group: list[int] | None,
                 reasons: list[str], stages: pa.Array, stats: _Columns | None = None) -> None:
        self.n = n
        self.stats = stats
        self.after_partition = after_partition
        self.kept = kept
        self.built = built
        self._group = group
        self._reasons = reasons
        self._stages = stages

    def partition_reason(self, i: int) -> str:
        return self._reasons[0 if self._group is None else self._group[i]]

    def partition_reasons(self) -> list[str]:
        """:meth:`partition_reason` of every row."""
        reasons = self._reasons
        if self._group is None:
            return [reasons[0]] * self.n
        return [reasons[g] for g in self._group]

    @property
    def stage_array(self) -> pa.Array:
        """:meth:`stages` as an Arrow int8 array."""
        return self._stages

    def stages(self) -> list[int]:
        """0 kept, 1 pruned by partition, 2 pruned by metrics, for every row."""
        return self._stages.to_pylist()


def decide(spec_filter: Any, live: StoredEntries) -> Decisions | None:
    """The decisions on every file of ``live`` (None when its columns are gone: the entries
    were built, decide them one by one)."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    table = live.source
    if table is None:
        return None
    n = table.num_rows
    part_ok, group, reasons = _partition(spec_filter, table, live.partition_fields)
    stats = _Columns(table)
    metrics = _metrics(spec_filter, stats)
    # three values per row: pruned by partition (1), by metrics (2), kept (0), undecided
    if metrics is None:
        metrics = pa.nulls(n, pa.bool_())
    stage = pc.if_else(part_ok, pc.if_else(metrics, 0, 2), 1)
    undecided = pc.indices_nonzero(pc.is_null(stage)).to_pylist()
    built: dict[int, ManifestEntry] = {}
    if undecided:
        values = stage.to_pylist()
        for i, e in zip(undecided, live.take(undecided), strict=True):
            ok, _ = spec_filter.metrics(e.data_file)
            values[i] = 0 if ok else 2
            if ok:
                built[i] = e
        stage = pa.array(values, pa.int8())
    kept = pc.indices_nonzero(pc.equal(stage, 0)).to_pylist()
    if len(kept) == n:  # every file kept: the entries are built once, kept with the manifest
        return Decisions(n, part_ok.true_count, kept, list(live), group, reasons, stage,
                         stats)
    todo = [i for i in kept if i not in built]
    for i, e in zip(todo, live.take(todo), strict=True):
        built[i] = e
    return Decisions(n, part_ok.true_count, kept, [built[i] for i in kept], group, reasons,
                     stage, stats)


# -- partition -----------------------------------------------------------------------------


def _partition(spec_filter: Any, table: pa.Table, n_parts: int
               ) -> tuple[pa.Array, list[int] | None, list[str]]:
    """(kept per row, group of each row or None for one group, reason per group): the
    partition evaluator run once per distinct partition tuple."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    n = table.num_rows
    cols = [table.column(f"p{k}").combine_chunks() for k in range(n_parts)]
    if not cols or not spec_filter.partitioned:
        ok, reason = spec_filter.partition_of(())
        return pa.array([ok] * n, pa.bool_()) if n else pa.array([], pa.bool_()), \
            None, [reason]
    if any(pa.types.is_floating(c.type) for c in cols):
        # -0.0 and 0.0 (and NaNs) would share a group but not an explanation: one by one
        tuples = list(zip(*(c.to_pylist() for c in cols), strict=True))
        got = [spec_filter.partition_of(t) for t in tuples]
        return pa.array([g[0] for g in got], pa.bool_()), list(range(n)), [g[1] for g in got]
    key: pa.Array | None = None
    for c in cols:
        enc = pc.dictionary_encode(c, null_encoding="encode")
        idx = pc.cast(enc.indices, pa.int64())
        if key is None:
            key = idx
        else:  # renumbered after each column, so the key stays below the number of rows
            key = pc.add(pc.multiply(key, len(enc.dictionary)), idx)
            key = pc.cast(pc.dictionary_encode(key).indices, pa.int64())
    assert key is not None
    gid = pc.dictionary_encode(key).indices  # groups numbered in order of first row
    groups = gid.to_pylist()
    first: list[int] = []  # the first row of each group: group g first seen when g groups are
    for i, g in enumerate(groups):
        if g == len(first):
            first.append(i)
    reps = [pc.take(c, pa.array(first, pa.int64())).to_pylist() for c in cols]
    got = [spec_filter.partition_of(t) for t in zip(*reps, strict=True)]
    ok_groups = pa.array([g[0] for g in got], pa.bool_())
    return pc.take(ok_groups, gid), groups, [g[1] for g in got]


# -- metrics -------------------------------------------------------------------------------

# bound type -> (width in bytes, Arrow type of the values)
_FIXED: dict[type, tuple[int, Callable[[], pa.DataType]]] = {}


def _fixed(t: Any) -> tuple[int, pa.DataType] | None:
    import pyarrow as pa

    if not _FIXED:
        _FIXED.update({
            IntegerType: (4, pa.int32), DateType: (4, pa.int32), LongType: (8, pa.int64),
            TimeType: (8, pa.int64), TimestampType: (8, pa.int64),
            TimestamptzType: (8, pa.int64), TimestampNanoType: (8, pa.int64),
            TimestamptzNanoType: (8, pa.int64), FloatType: (4, pa.float32),
            DoubleType: (8, pa.float64)})
    got = _FIXED.get(type(t))
    return None if got is None else (got[0], got[1]())


class _Columns:
    """The statistics of one field id over every row, read from the maps when first asked
    for. A map the extension refuses makes every answer that needs it undecided."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.n = table.num_rows
        self._got: dict[tuple[str, int], pa.Array | None] = {}

    def files(self, rows: list[int], fids: set[int], paths: list[str]) -> list[DataFile] | None:
        """Data files of ``rows`` holding only what a metrics evaluator of the field ids
        ``fids`` reads (record count; counts and bounds of those ids), read from the columns:
        the evaluator decides and explains them as it would the whole entries (a missing
        map and a map without the id read alike). None when a map cannot be read here."""
        from floe import arrow_compute as pc

        counts = ("value_counts", "null_value_counts", "nan_value_counts")
        bounds = ("lower_bounds", "upper_bounds")
        taken = pc.take(self.table.column("record_count"), rows).to_pylist()
        maps: list[list[dict[int, Any]]] = []
        for name in (*counts, *bounds):
            per_row: list[dict[int, Any]] = [{} for _ in rows]
            for fid in fids:
                got = self._map(name, fid, name in bounds)
                if got is None:
                    return None
                for m, v in zip(per_row, pc.take(got, rows).to_pylist(), strict=True):
                    if v is not None:
                        m[fid] = v
            maps.append(per_row)
        new, data = tuple.__new__, FileContent.DATA
        return [new(DataFile, (data, paths[r], FileFormat.PARQUET, (), count, 0, None, vc, nc,
                               nan, lo, up, None, None, None, None, 0, None, None, None, None))
                for r, count, vc, nc, nan, lo, up in zip(rows, taken, *maps, strict=True)]

    def _map(self, name: str, fid: int, as_bytes: bool) -> pa.Array | None:
        import pyarrow as pa

        from floe.scan import native

        key = (name, fid)
        if key in self._got:
            return self._got[key]
        col = self.table.column(name).combine_chunks()
        ext = native.extension()
        got: pa.Array | None = None
        if ext is not None:
            validity, offsets, data = col.buffers()
            try:
                out = ext.map_get(offsets, data if data is not None else b"", validity,
                                  col.offset, len(col), fid, as_bytes)
            except (ext.Truncated, ext.Corrupt, ext.Unsupported, ValueError):
                out = None
            if out is not None:
                if as_bytes:
                    nulls, valid, offs, body = out
                    got = pa.Array.from_buffers(pa.binary(), self.n, [
                        pa.py_buffer(valid), pa.py_buffer(offs), pa.py_buffer(body)], nulls)
                else:
                    nulls, valid, values = out
                    got = pa.Array.from_buffers(pa.int64(), self.n, [
                        pa.py_buffer(valid), pa.py_buffer(values)], nulls)
        self._got[key] = got
        return got

    def count(self, name: str, fid: int) -> pa.Array | None:
        return self._map(name, fid, False)

    def bound(self, name: str, fid: int, t: Any) -> tuple[pa.Array, pa.Array] | None:
        """(values, odd): the bound as Arrow values (null where missing, or where the scalar
        evaluator counts it missing: a NaN), and where a bound is there but not in the
        width this type reads in bulk (undecided there)."""
        import pyarrow as pa
        from floe import arrow_compute as pc

        raw = self._map(name, fid, True)
        if raw is None:
            return None
        if isinstance(t, StringType):
            try:
                return pc.cast(raw, pa.string()), pa.array([False] * self.n, pa.bool_())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None  # a bound that is not UTF-8: the scalar evaluator decides
        fixed = _fixed(t)
        if fixed is None:
            return None
        width, type_ = fixed
        right = pc.equal(pc.binary_length(raw), width)
        odd = pc.fill_null(pc.invert(right), False)
        sized = pc.cast(pc.if_else(right, raw, pa.scalar(None, pa.binary())), pa.binary(width))
        validity, data = sized.buffers()
        values = pa.Array.from_buffers(type_, len(sized), [validity, data], sized.null_count,
                                       sized.offset)
        if pa.types.is_floating(type_):
            values = pc.if_else(pc.is_nan(values), pa.scalar(None, type_), values)
        return values, odd


def _metrics(spec_filter: Any, stats: _Columns) -> pa.Array | None:
    """Might each row match the metrics evaluator's expression (null: undecided)."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    expr = spec_filter.metrics_expression
    if expr is None:  # no filter: every file kept
        return pa.array([True] * stats.n, pa.bool_())
    got = _expression(expr, stats)
    if got is None:
        return None
    count = stats.table.column("record_count").combine_chunks()
    # Java: a file without rows cannot match, one with an unknown (negative) count might
    return pc.if_else(pc.equal(count, 0), False,
                      pc.if_else(pc.less(count, 0), True, got)) \
        if spec_filter.metrics_prunes_empty else pc.if_else(pc.less_equal(count, 0), True, got)


def _expression(e: BooleanExpression, stats: _Columns) -> pa.Array | None:
    import pyarrow as pa
    from floe import arrow_compute as pc

    if isinstance(e, AlwaysTrue):
        return pa.array([True] * stats.n, pa.bool_())
    if isinstance(e, AlwaysFalse):
        return pa.array([False] * stats.n, pa.bool_())
    if isinstance(e, (And, Or)):
        left, right = _expression(e.left, stats), _expression(e.right, stats)
        if left is None or right is None:
            other = left if right is None else right
            if other is None:
                return None
            missing = pa.nulls(stats.n, pa.bool_())
            left, right = (other, missing)
        combine = pc.and_kleene if isinstance(e, And) else pc.or_kleene
        return combine(left, right)
    if isinstance(e, Predicate):
        return _leaf(e, stats)
    return None


def _leaf(p: Predicate, stats: _Columns) -> pa.Array | None:
    """The inclusive metrics rule of ``p`` (floe.expressions.metrics._inclusive_leaf) over
    the rows: True might match, False cannot, null undecided; None when not done in bulk."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    if isinstance(p, (NotEqualTo, NotIn)):
        return pa.array([True] * stats.n, pa.bool_())
    ref = p.ref
    fid, t = ref.field_id, ref.type
    vc = stats.count("value_counts", fid)
    nc = stats.count("null_value_counts", fid)
    nan = stats.count("nan_value_counts", fid)
    if vc is None or nc is None or nan is None:
        return None

    def same(a: pa.Array, b: pa.Array) -> pa.Array:  # both known and equal
        return pc.fill_null(pc.equal(a, b), False)

    nulls_only, nans_only = same(vc, nc), same(vc, nan)
    if isinstance(p, IsNull):
        return pc.invert(pc.fill_null(pc.equal(nc, 0), False))
    if isinstance(p, NotNull):
        return pc.invert(nulls_only)
    if isinstance(p, IsNaN):
        return pc.invert(pc.or_(pc.fill_null(pc.equal(nan, 0), False), nulls_only))
    if isinstance(p, NotNaN):
        return pc.invert(nans_only)
    if not isinstance(p, (LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual,
                          EqualTo)):
        return None
    lit = p.literal.value
    absent = pc.or_(nulls_only, nans_only)
    odd: pa.Array | None = None
    prune: pa.Array | None = None

    def add(cond: pa.Array) -> None:
        nonlocal prune
        cond = pc.fill_null(cond, False)  # a missing bound never prunes
        prune = cond if prune is None else pc.or_(prune, cond)

    def bound(name: str) -> pa.Array | None:
        nonlocal odd
        got = stats.bound(name, fid, t)
        if got is None:
            return None
        values, wrong = got
        odd = wrong if odd is None else pc.or_(odd, wrong)
        return values

    try:
        scalar = pa.scalar(lit)
        if isinstance(p, (LessThan, LessThanOrEqual, EqualTo)):
            lower = bound("lower_bounds")
            if lower is None:
                return None
            add(pc.greater_equal(lower, scalar) if isinstance(p, LessThan)
                else pc.greater(lower, scalar))
        if isinstance(p, (GreaterThan, GreaterThanOrEqual, EqualTo)):
            upper = bound("upper_bounds")
            if upper is None:
                return None
            add(pc.less_equal(upper, scalar) if isinstance(p, GreaterThan)
                else pc.less(upper, scalar))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return None  # a literal Arrow does not compare with the bounds: one by one
    assert prune is not None and odd is not None
    # the scalar rule: nulls or NaNs only prune first; then an odd bound is the scalar
    # evaluator's to read; then the bounds
    undecided = pa.scalar(None, pa.bool_())
    return pc.if_else(absent, False, pc.if_else(odd, undecided, pc.invert(prune)))


# -- explanations --------------------------------------------------------------------------


class DecidedFiles(ColumnarFiles):
    """The decisions on the files of a manifest decided in bulk (:func:`decide`), in file
    order, built when first read: kept files' as the plan made them, files pruned by their
    partition from the path column and their group's explanation, files pruned by metrics
    explained by the scalar evaluator then (the only entries built for a pruned file)."""

    __slots__ = ("kept_count",)

    def __init__(self, live: StoredEntries, decisions: Decisions, spec_filter: Any,
                 kept: list[FileDecision]) -> None:
        super().__init__((live, decisions, spec_filter, kept), decisions.n)
        self.kept_count = len(kept)

    def _build(self, source: tuple[Any, ...]) -> list[FileDecision]:
        live, decisions, spec_filter, kept = source
        stages = decisions.stages()
        paths = live.data_file_column("file_path")
        metric_reasons = _metric_reasons(live, decisions, spec_filter, stages, paths)
        out: list[FileDecision] = []
        k = iter(kept)
        for i, s in enumerate(stages):
            if s == 0:
                out.append(next(k))
            elif s == 1:
                out.append(FileDecision(paths[i], "data", False, "partition",
                                        decisions.partition_reason(i)))
            else:
                out.append(FileDecision(paths[i], "data", False, "metrics", metric_reasons[i]))
        return out

    def json_text(self) -> str | None:
        """The decisions' JSON written by Arrow from the path column, a stage and a reason per
        row (kept files' from their decisions, which the plan built)."""
        import pyarrow as pa

        from floe import arrow_compute as pc
        from floe.scan.explain import encode_compact, joined_texts, json_row_texts

        source = self.source
        if source is None:
            return None
        live, decisions, spec_filter, kept = source
        path_column = live.arrow_column("file_path")
        if path_column is None:
            return None
        stages = decisions.stages()
        needs_paths = any(s == 2 for s in stages)
        paths = live.data_file_column("file_path") if needs_paths else []
        reasons = decisions.partition_reasons()
        for i, reason in _metric_reasons(live, decisions, spec_filter, stages, paths).items():
            reasons[i] = reason
        stage_of = pa.array([None, "partition", "metrics"], pa.string())
        texts = json_row_texts([("path", path_column), ("content", "data"), ("kept", False),
                                ("stage", pc.take(stage_of, decisions.stage_array)),
                                ("reason", pa.array(reasons, pa.string()))])
        if texts is None:
            return None
        if kept:
            kept_texts: list[str | None] = [None] * decisions.n
            for i, d in zip(decisions.kept, kept, strict=True):
                kept_texts[i] = encode_compact(d.to_json()) + ","
            texts = pc.if_else(pc.equal(decisions.stage_array, 0),
                               pa.array(kept_texts, pa.string()), texts)
        return joined_texts(texts)

    def __repr__(self) -> str:
        return f"DecidedFiles({len(self)} files, {self.kept_count} kept)"


def _metric_reasons(live: StoredEntries, decisions: Decisions, spec_filter: Any,
                    stages: list[int], paths: list[str]) -> dict[int, str]:
    """The metrics evaluator's explanation of each file pruned by its metrics, by row: read
    from light data files built from the columns, or from the whole entries."""
    by_metrics = [i for i, s in enumerate(stages) if s == 2]
    files = None
    expr = spec_filter.metrics_expression
    if by_metrics and decisions.stats is not None and expr is not None:
        fids = {p.ref.field_id for p in walk_predicates(expr)}
        files = decisions.stats.files(by_metrics, fids, paths)
    if files is None:  # the whole entries, built
        files = [e.data_file for e in live.take(by_metrics)]
    return {i: spec_filter.metrics(df)[1] for i, df in zip(by_metrics, files, strict=True)}
