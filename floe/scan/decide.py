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

Explanations follow the same rules: each predicate's rules carry the scalar evaluator's text
in its order, combined as :func:`floe.expressions.visitors.compile_explained` combines them;
a plan writes its file decisions' JSON from the columns (:meth:`DecidedFiles.json_text`).

The decisions and explanations equal the scalar evaluators' file by file
(tests/floe/test_bulk_decisions.py checks it on random files and filters).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from floe.avro_native import extension
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
from floe.expressions.visitors import show_value
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

__all__ = ["Decisions", "DecidedFiles", "decide", "explained_rows", "kept_reasons"]


class Decisions:
    """A manifest's files decided: ``stage`` of each (None kept, "partition" or "metrics"
    pruned); ``kept`` the row numbers of the kept files and ``built`` their entries, in
    order; ``partition_reason(i)`` the partition evaluator's explanation of row ``i``."""

    __slots__ = ("n", "after_partition", "kept", "built", "_group", "_reasons", "_stages",
                 "stats", "_explained", "_texts")

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
        self._explained: dict[int, str] | None = None
        self._texts: tuple[pa.Array, pa.Array | None] | None | bool = False

    def metric_texts(self, spec_filter: Any) -> tuple[pa.Array, pa.Array | None] | None:
        """:func:`explained_texts` of every file the partition keeps (kept or pruned by its
        metrics), written over the columns once per manifest: the plan reads the kept
        files' when it decides, the pruned ones' when they are read or written."""
        if self._texts is False:
            from floe import arrow_compute as pc

            self._texts = None if self.stats is None else explained_texts(
                spec_filter, self.stats, pc.not_equal(self._stages, 1))
        return self._texts  # type: ignore[return-value]

    @property
    def texts_written(self) -> bool:
        """Whether :meth:`metric_texts` has run."""
        return self._texts is not False

    def metric_explanations(self, spec_filter: Any) -> dict[int, str]:
        """:meth:`metric_texts` by row, where the bulk rules decide."""
        if self._explained is None:
            got = self.metric_texts(spec_filter)
            self._explained = {} if got is None else _texts_of(
                got, [i for i, s in enumerate(self.stages()) if s != 1])
        return self._explained

    @property
    def one_group(self) -> bool:
        """Whether the partition evaluator gave every row the same answer."""
        return self._group is None

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


def referenced_paths(live: StoredEntries) -> list[str | None] | None:
    """:func:`~floe.scan.delete_index.referenced_data_file` of every entry of a delete
    manifest, read from the columns (the ``file_path`` bounds taken out of the maps by the
    extension, not decoded map by map). None when the entries are built already, or a map
    cannot be read here."""
    from floe.scan.delete_index import FILE_PATH_FIELD_ID

    table = live.source
    if table is None:
        return None
    stats = _Columns(table)
    lower = stats.bound_bytes("lower_bounds", FILE_PATH_FIELD_ID)
    upper = stats.bound_bytes("upper_bounds", FILE_PATH_FIELD_ID)
    if lower is None or upper is None:
        return None
    out: list[str | None] = []
    position = int(FileContent.POSITION_DELETES)
    for content, ref, lo, up in zip(table.column("content").to_pylist(),
                                    table.column("referenced_data_file").to_pylist(),
                                    lower.to_pylist(), upper.to_pylist(), strict=True):
        if content != position:
            out.append(None)
        elif ref is not None:
            out.append(ref)
        elif lo is None or lo != up:
            out.append(None)
        else:
            try:
                out.append(lo.decode())
            except UnicodeDecodeError:
                out.append(None)
    return out


def partition_rows(spec_filter: Any, live: StoredEntries) -> tuple[list[bool], list[str]]:
    """The partition evaluator's verdict on each entry, ``spec_filter.partition(file)``, as
    (kept, reason) lists, run once per distinct partition over the columns (entries not
    built)."""
    table = live.source
    assert table is not None
    ok, groups, reasons = _partition(spec_filter, table, live.partition_fields)
    return ok.to_pylist(), [reasons[0]] * len(live) if groups is None \
        else [reasons[g] for g in groups]


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
        #: _rules of each predicate (by id, the predicate kept alive beside its rules):
        #: deciding and explaining a manifest read the same rules
        self.rules: dict[int, tuple[Predicate, Any]] = {}

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

        key = (name, fid)
        if key in self._got:
            return self._got[key]
        column = self.table.column(name)  # one chunk when decoded here: not copied
        col = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
        ext = extension()
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

    def bound_bytes(self, name: str, fid: int) -> pa.Array | None:
        """A bound map's values for ``fid`` as they are stored (binary, null where missing)."""
        return self._map(name, fid, True)

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


class _Rule(NamedTuple):
    """One way the inclusive rule of a predicate prunes a row: where (no nulls), the
    explanation's text, and the bound shown after it (None: the text alone)."""

    where: pa.Array
    text: str
    shown: pa.Array | None = None


def _rules(p: Predicate, stats: _Columns) -> tuple[list[_Rule], pa.Array | None] | None:
    """The inclusive metrics rule of ``p`` (floe.expressions.metrics._inclusive_leaf) over the
    rows, as its pruning rules in the order the scalar evaluator tries them, and where the
    bulk answer holds (None: everywhere; elsewhere a bound is not in the width this type
    reads in bulk, the scalar evaluator's to read). None when not done in bulk. Worked out
    once per predicate and manifest (kept in ``stats``)."""
    got = stats.rules.get(id(p))
    if got is None or got[0] is not p:
        got = stats.rules[id(p)] = (p, _rules_of(p, stats))
    return got[1]


def _rules_of(p: Predicate, stats: _Columns) -> tuple[list[_Rule], pa.Array | None] | None:
    import pyarrow as pa
    from floe import arrow_compute as pc

    if isinstance(p, (NotEqualTo, NotIn)):
        return [], None
    ref = p.ref
    fid, t, name = ref.field_id, ref.type, ref.name
    ps = str(p)
    vc = stats.count("value_counts", fid)
    nc = stats.count("null_value_counts", fid)
    nan = stats.count("nan_value_counts", fid)
    if vc is None or nc is None or nan is None:
        return None

    def same(a: pa.Array, b: Any) -> pa.Array:  # both known and equal
        return pc.fill_null(pc.equal(a, b), False)

    all_null = _Rule(same(vc, nc), f"pruned: {ps} but all values of {name} are null")
    all_nan = _Rule(same(vc, nan), f"pruned: {ps} but all values of {name} are NaN")
    if isinstance(p, IsNull):
        return [_Rule(same(nc, 0), f"pruned: {ps} but null_value_count({name}) = 0")], None
    if isinstance(p, NotNull):
        return [all_null], None
    if isinstance(p, IsNaN):
        return [_Rule(same(nan, 0), f"pruned: {ps} but nan_value_count({name}) = 0"),
                all_null], None
    if isinstance(p, NotNaN):
        return [all_nan], None
    if not isinstance(p, (LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual,
                          EqualTo)):
        return None
    rules = [all_null, all_nan]
    odd: pa.Array | None = None
    try:
        scalar = pc.as_scalar(p.literal.value)
        for name_, lower in (("lower_bounds", True), ("upper_bounds", False)):
            if lower and isinstance(p, (GreaterThan, GreaterThanOrEqual)) or \
                    not lower and isinstance(p, (LessThan, LessThanOrEqual)):
                continue
            got = stats.bound(name_, fid, t)
            if got is None:
                return None
            values, wrong = got
            odd = wrong if odd is None else pc.or_(odd, wrong)
            if lower:
                prunes = pc.greater_equal(values, scalar) if isinstance(p, LessThan) \
                    else pc.greater(values, scalar)
            else:
                prunes = pc.less_equal(values, scalar) if isinstance(p, GreaterThan) \
                    else pc.less(values, scalar)
            # a missing bound never prunes
            rules.append(_Rule(pc.fill_null(prunes, False),
                               f"pruned: {ps} but {'lower' if lower else 'upper'}_bound({name})"
                               " = ", values))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return None  # a literal Arrow does not compare with the bounds: one by one
    assert odd is not None
    # nulls or NaNs only prune first, whatever the bounds
    return rules, pc.or_(pc.or_(all_null.where, all_nan.where), pc.invert(odd))


def _leaf(p: Predicate, stats: _Columns) -> pa.Array | None:
    """The inclusive metrics rule of ``p`` over the rows: True might match, False cannot,
    null undecided; None when not done in bulk."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    got = _rules(p, stats)
    if got is None:
        return None
    rules, holds = got
    might = _might(rules, stats.n)
    return might if holds is None else pc.if_else(holds, might, pa.scalar(None, pa.bool_()))


def _might(rules: list[_Rule], n: int) -> pa.Array:
    """Where no rule prunes: the row might match."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    prunes: pa.Array | None = None
    for rule in rules:
        prunes = rule.where if prunes is None else pc.or_(prunes, rule.where)
    return pa.array([True] * n, pa.bool_()) if prunes is None else pc.invert(prunes)


def _explained(e: BooleanExpression, stats: _Columns, need: pa.Array
               ) -> tuple[pa.Array, pa.Array, pa.Array | None] | None:
    """floe.expressions.visitors.compile_explained of the inclusive rules over the rows:
    (might match, explanation, where both hold: None everywhere); None when not done in
    bulk. The explanation is right only where ``need`` is true: a bound is shown only where
    the text that shows it is the one the evaluator gives (a right-hand side read only
    where the left one lets it speak)."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    n = stats.n
    if isinstance(e, (AlwaysTrue, AlwaysFalse)):
        ok = isinstance(e, AlwaysTrue)
        text = f"the filter is always {'true' if ok else 'false'}"
        return pa.array([ok] * n, pa.bool_()), pa.array([text] * n, pa.string()), None
    if isinstance(e, (And, Or)):
        left = _explained(e.left, stats, need)
        if left is None:
            return None
        a, wa, ha = left
        # AND: the right side speaks where the left might match; OR: where it cannot
        right = _explained(e.right, stats,
                           pc.and_(need, a if isinstance(e, And) else pc.invert(a)))
        if right is None:
            return None
        b, wb, hb = right
        if isinstance(e, And):
            ok = pc.and_(a, b)
            text = pc.if_else(a, pc.if_else(b, pc.binary_join_element_wise(wa, "; ", wb, ""),
                                            wb), wa)
        else:
            ok = pc.or_(a, b)
            text = pc.if_else(a, wa, pc.if_else(
                b, wb, pc.binary_join_element_wise(wa, "; and ", wb, "")))
        holds = hb if ha is None else ha if hb is None else pc.and_(ha, hb)
        return ok, text, holds
    if not isinstance(e, Predicate):
        return None
    got = _rules(e, stats)
    if got is None:
        return None
    rules, holds = got
    texts: list[Any] = []
    silent = need  # rows still needing a text: no earlier rule prunes them
    for rule in rules:  # the first rule that prunes explains
        says: Any = pa.scalar(rule.text, pa.string())
        if rule.shown is not None:
            shown = _shown(e.ref.type, rule.shown, pc.and_(silent, rule.where))
            says = pc.binary_join_element_wise(says, shown, "")
        texts.append(says)
        silent = pc.and_(silent, pc.invert(rule.where))
    text = pa.nulls(n, pa.string())
    for rule, says in zip(reversed(rules), reversed(texts), strict=True):
        text = pc.if_else(rule.where, says, text)
    return _might(rules, n), pc.fill_null(text, f"kept: {e} might match"), holds


def _shown(t: Any, values: pa.Array, where: pa.Array) -> pa.Array:
    """Each value as a filter writes it (floe.expressions.visitors.show_value), for the rows
    ``where`` says (null elsewhere)."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    if isinstance(t, (IntegerType, LongType)):  # shown as Python writes the number
        return pc.cast(values, pa.string())
    rows = pc.indices_nonzero(where)
    out: list[str | None] = [None] * len(values)
    for i, v in zip(rows.to_pylist(), pc.take(values, rows).to_pylist(), strict=True):
        out[i] = show_value(t, v)
    return pa.array(out, pa.string())


def explained_rows(spec_filter: Any, stats: _Columns, rows: list[int]) -> dict[int, str]:
    """The metrics evaluator's explanation (``spec_filter.metrics(file)[1]``) of each of
    ``rows`` the bulk rules decide, written over the columns (rows they leave to the scalar
    evaluator are left out)."""
    import pyarrow as pa

    need = [False] * stats.n
    for r in rows:
        need[r] = True
    got = explained_texts(spec_filter, stats, pa.array(need, pa.bool_())) if rows else None
    return {} if got is None else _texts_of(got, rows)


def explained_texts(spec_filter: Any, stats: _Columns, need: pa.Array
                    ) -> tuple[pa.Array, pa.Array | None] | None:
    """The metrics evaluator's explanation of every row, right where ``need`` is true, as a
    string array, and where the bulk rules decide (None: everywhere; elsewhere the scalar
    evaluator's to explain). None when not done in bulk."""
    from floe import arrow_compute as pc

    expr = spec_filter.metrics_expression
    if expr is None:
        return None
    got = _explained(expr, stats, need)
    if got is None:
        return None
    _, text, holds = got
    count = stats.table.column("record_count").combine_chunks()
    unknown = pc.less_equal(count, 0)
    if spec_filter.metrics_prunes_empty:  # InclusiveMetricsEvaluator.explain's order
        text = pc.if_else(pc.equal(count, 0), "pruned: the file has no rows",
                          pc.if_else(unknown, "kept: the record count is unknown", text))
    else:
        text = pc.if_else(unknown, "kept: the record count is unknown", text)
    return text, None if holds is None else pc.or_(holds, unknown)


def _texts_of(got: tuple[pa.Array, pa.Array | None], rows: list[int]) -> dict[int, str]:
    """The texts of :func:`explained_texts` at ``rows``, where the bulk rules decide."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    text, sure = got
    at = pa.array(rows, pa.int64())
    taken = pc.take(text, at).to_pylist()
    if sure is None:
        return dict(zip(rows, taken, strict=True))
    return {r: x for r, x, ok in zip(rows, taken, pc.take(sure, at).to_pylist(), strict=True)
            if ok}


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
        reason = _reasons_array(decisions, spec_filter)
        if reason is None:  # some left to the scalar evaluator
            stages = decisions.stages()
            reasons = decisions.partition_reasons()
            for i, text in _metric_reasons(live, decisions, spec_filter, stages).items():
                reasons[i] = text
            reason = pa.array(reasons, pa.string())
        stage_of = pa.array([None, "partition", "metrics"], pa.string())
        texts = json_row_texts([("path", path_column), ("content", "data"), ("kept", False),
                                ("stage", pc.take(stage_of, decisions.stage_array)),
                                ("reason", reason)])
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


#: Up to this many kept files, a manifest's kept files are explained one by one by the scalar
#: evaluator (some 25 us a file) rather than over the columns, whose rules cost about a
#: millisecond a manifest whatever the number of files: the pruned files' explanations are
#: then worked out only if they are read (a page of the explorer's plan reads few manifests').
SCALAR_KEPT = 32


def kept_reasons(spec_filter: Any, decisions: Decisions) -> list[str]:
    """The metrics evaluator's explanation of each kept file (in ``decisions.kept`` order):
    over the columns where the bulk rules decide, else from the built entry."""
    if len(decisions.kept) <= SCALAR_KEPT and not decisions.texts_written:
        return [spec_filter.metrics(e.data_file)[1] for e in decisions.built]
    texts = decisions.metric_texts(spec_filter)
    got = {} if texts is None else _texts_of(texts, decisions.kept)
    return [got[i] if i in got else spec_filter.metrics(e.data_file)[1]
            for i, e in zip(decisions.kept, decisions.built, strict=True)]


def _reasons_array(decisions: Decisions, spec_filter: Any) -> Any:
    """The reason of every pruned file, as Arrow writes them: the partition evaluator's
    where the partition prunes, the bulk metrics rules' elsewhere (kept files' are someone
    else's to write). None when the bulk rules leave a file pruned by its metrics to the
    scalar evaluator."""
    import pyarrow as pa
    from floe import arrow_compute as pc

    by_metrics = pc.equal(decisions.stage_array, 2)
    texts = decisions.metric_texts(spec_filter)
    partition = decisions.partition_reason(0) if decisions.one_group else \
        pa.array(decisions.partition_reasons(), pa.string())
    if texts is None:
        return None if pc.any(by_metrics).as_py() else partition
    text, sure = texts
    if sure is not None and pc.any(pc.and_(by_metrics, pc.invert(sure))).as_py():
        return None
    return pc.if_else(by_metrics, text, partition)


def _metric_reasons(live: StoredEntries, decisions: Decisions, spec_filter: Any,
                    stages: list[int], paths: list[str] | None = None) -> dict[int, str]:
    """The metrics evaluator's explanation of each file pruned by its metrics, by row: read
    from light data files built from the columns, or from the whole entries."""
    by_metrics = [i for i, s in enumerate(stages) if s == 2]
    stats = decisions.stats
    explained = decisions.metric_explanations(spec_filter)
    out = {i: explained[i] for i in by_metrics if i in explained}
    rest = [i for i in by_metrics if i not in out]  # the scalar evaluator's
    files = None
    expr = spec_filter.metrics_expression
    if rest and stats is not None and expr is not None:
        fids = {p.ref.field_id for p in walk_predicates(expr)}
        if paths is None:
            paths = live.data_file_column("file_path")
        files = stats.files(rest, fids, paths)
    if files is None:  # the whole entries, built
        files = [e.data_file for e in live.take(rest)]
    out.update((i, spec_filter.metrics(df)[1]) for i, df in zip(rest, files, strict=True))
    return out
