"""Twins against the reference: snapshot management.

The same table is built twice by Spark; floe changes one copy (rollback, set-current,
cherry-pick, branches and tags with retention, commits to branches, fast-forward, WAP publish)
and Spark's SQL and procedures change the other in the same way. Spark + Iceberg Java then
reads both: the same rows on every ref, the same refs with the same retention, and the same
snapshot graph (snapshot ids differ between the copies, so snapshots are compared by their
position in the table's snapshot list).
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.table import Table

pytestmark = pytest.mark.interop

NS = "db"
DAY_MS = 86_400_000


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i % 3}" for i in ids]})


def values(*ids: int) -> str:
    return ", ".join(f"({i}, 's{i % 3}')" for i in ids)


@dataclass
class Twin:
    """One step applied to both copies: ``floe(table, ordinals)`` and Spark SQL statements
    (``{t}`` is the table, ``{s0}``.. the snapshot ids of that copy by position,
    ``{ts_mid(a, b)}`` a timestamp between two snapshots)."""

    floe: Callable[[Table, list[int]], Any] | None
    spark: list[str]


CASES: dict[str, list[Twin]] = {
    "rollback_cherry_pick": [
        Twin(lambda t, s: t.manage_snapshots().rollback_to(s[0]).commit(),
             ["CALL oracle.system.rollback_to_snapshot('{ident}', {s0})"]),
        Twin(None, ["INSERT INTO {t} VALUES " + values(40, 41)]),
        Twin(lambda t, s: t.manage_snapshots().cherry_pick(s[1]).commit(),
             ["CALL oracle.system.cherrypick_snapshot('{ident}', {s1})"]),
        Twin(lambda t, s: t.manage_snapshots().cherry_pick(s[2]).commit(),
             ["CALL oracle.system.cherrypick_snapshot('{ident}', {s2})"]),
        Twin(lambda t, s: t.manage_snapshots().rollback_to_time(_mid(t, 3, 4)).commit(),
             ["CALL oracle.system.rollback_to_timestamp('{ident}', TIMESTAMP '{mid34}')"]),
        Twin(lambda t, s: t.manage_snapshots().set_current(s[5]).commit(),
             ["CALL oracle.system.set_current_snapshot('{ident}', {s5})"]),
    ],
    "branches_and_tags": [
        Twin(lambda t, s: t.manage_snapshots()
             .create_branch("dev", s[0], min_snapshots_to_keep=2,
                            max_snapshot_age_ms=3 * DAY_MS, max_ref_age_ms=7 * DAY_MS)
             .create_tag("t1", s[1], max_ref_age_ms=10 * DAY_MS).commit(),
             ["ALTER TABLE {t} CREATE BRANCH dev AS OF VERSION {s0} RETAIN 7 DAYS "
              "WITH SNAPSHOT RETENTION 2 SNAPSHOTS 3 DAYS",
              "ALTER TABLE {t} CREATE TAG t1 AS OF VERSION {s1} RETAIN 10 DAYS"]),
        Twin(lambda t, s: t.append(rows(50, 51, 52), branch="dev"),
             # one file, as floe's append writes it: the delete below then rewrites it on both
             ["INSERT INTO {t}.branch_dev SELECT /*+ REPARTITION(1) */ * FROM VALUES "
              + values(50, 51, 52)]),
        Twin(lambda t, s: t.delete_where("id = 51", branch="dev"),
             ["DELETE FROM {t}.branch_dev WHERE id = 51"]),
        Twin(lambda t, s: t.manage_snapshots().create_branch("b2").commit(),
             ["ALTER TABLE {t} CREATE BRANCH b2"]),
        Twin(lambda t, s: t.append(rows(60), branch="b2"),
             ["INSERT INTO {t}.branch_b2 VALUES " + values(60)]),
        Twin(lambda t, s: t.manage_snapshots().fast_forward("main", "b2").commit(),
             ["CALL oracle.system.fast_forward('{ident}', 'main', 'b2')"]),
        Twin(lambda t, s: t.manage_snapshots().replace_branch("dev", s[1])
             .remove_tag("t1").create_tag("t2", s[2]).commit(),
             ["ALTER TABLE {t} REPLACE BRANCH dev AS OF VERSION {s1}",
              "ALTER TABLE {t} DROP TAG t1",
              "ALTER TABLE {t} CREATE TAG t2 AS OF VERSION {s2}"]),
        Twin(lambda t, s: t.manage_snapshots().remove_branch("b2").commit(),
             ["ALTER TABLE {t} DROP BRANCH b2"]),
    ],
    "write_audit_publish": [
        Twin(lambda t, s: t.set_properties({"write.wap.enabled": "true"}),
             ["ALTER TABLE {t} SET TBLPROPERTIES ('write.wap.enabled'='true')"]),
        Twin(lambda t, s: t.append(rows(70, 71), wap_id="job-1"),
             ["SET spark.wap.id = job-1", "INSERT INTO {t} VALUES " + values(70, 71),
              "RESET spark.wap.id"]),
        Twin(None, ["INSERT INTO {t} VALUES " + values(80)]),
        Twin(lambda t, s: t.manage_snapshots().publish_wap("job-1").commit(),
             ["CALL oracle.system.publish_changes('{ident}', 'job-1')"]),
    ],
}


def _mid(t: Table, a: int, b: int) -> int:
    snaps = t.metadata.snapshots
    return (snaps[a].timestamp_ms + snaps[b].timestamp_ms) // 2


def _fill(sql: str, name: str, snaps: list[Any]) -> str:
    ids = {f"s{i}": s.snapshot_id for i, s in enumerate(snaps)}
    mids = {}
    if len(snaps) > 4:  # a literal: procedure arguments take no expressions (UTC session)
        ms = (snaps[3].timestamp_ms + snaps[4].timestamp_ms) // 2
        at = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
        mids["mid34"] = at.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"
    return sql.format(t=f"oracle.{NS}.{name}", ident=f"{NS}.{name}", **ids, **mids)


def _graph(t: Table) -> list[tuple[Any, ...]]:
    """Snapshots by position: parent position, operation, source / wap ids by position,
    records."""
    pos = {s.snapshot_id: i for i, s in enumerate(t.metadata.snapshots)}

    def p(sid: Any) -> Any:
        return pos.get(int(sid)) if sid is not None else None

    return [(i, p(s.parent_snapshot_id), s.summary.get("operation"),
             p(s.summary.get("source-snapshot-id")), s.summary.get("published-wap-id"),
             s.summary.get("wap.id"), s.summary.get("total-records"))
            for i, s in enumerate(t.metadata.snapshots)]


def _refs(t: Table) -> dict[str, tuple[Any, ...]]:
    pos = {s.snapshot_id: i for i, s in enumerate(t.metadata.snapshots)}
    return {n: (pos[r.snapshot_id], str(r.ref_type), r.min_snapshots_to_keep,
                r.max_snapshot_age_ms, r.max_ref_age_ms) for n, r in t.metadata.refs.items()}


@pytest.fixture(scope="module")
def twins(oracle: Any) -> dict[str, tuple[Table, Table]]:
    catalog = FileSystemCatalog("twins", str(oracle.warehouse))
    setup: list[str] = []
    names: list[tuple[str, str, str]] = []
    for case in CASES:
        for fv in (1, 2):
            for part in (False, True):
                base = f"ms_{case}_v{fv}{'p' if part else 'u'}"
                names.append((case, f"{base}_floe", f"{base}_spark"))
                for name in (f"{base}_floe", f"{base}_spark"):
                    by = " PARTITIONED BY (s)" if part else ""
                    t = f"oracle.{NS}.{name}"
                    setup += [
                        f"CREATE TABLE {t} (id bigint, s string) USING iceberg{by} "
                        f"TBLPROPERTIES ('format-version'='{fv}')",
                        f"INSERT INTO {t} VALUES " + values(1, 2, 3),
                        f"INSERT INTO {t} VALUES " + values(10, 11),
                        f"INSERT INTO {t} VALUES " + values(20),
                    ]
    oracle.sql(setup)
    out = {}
    for case, floe_name, spark_name in names:
        for step in CASES[case]:
            floe_t = catalog.load_table(f"{NS}.{floe_name}")
            spark_t = catalog.load_table(f"{NS}.{spark_name}")
            if step.floe is not None:
                step.floe(floe_t, [s.snapshot_id for s in floe_t.metadata.snapshots])
                stmts = []
            else:
                stmts = [_fill(s, floe_name, list(floe_t.metadata.snapshots))
                         for s in step.spark]
            stmts += [_fill(s, spark_name, list(spark_t.metadata.snapshots))
                      for s in step.spark]
            oracle.sql(stmts)
        out[floe_name.removesuffix("_floe")] = (catalog.load_table(f"{NS}.{floe_name}"),
                                                catalog.load_table(f"{NS}.{spark_name}"))
    return out


NAMES = [f"ms_{c}_v{fv}{p}" for c in CASES for fv in (1, 2) for p in ("u", "p")]


@pytest.mark.parametrize("name", NAMES)
def test_same_snapshot_graph_and_refs(twins: Any, name: str) -> None:
    floe_t, spark_t = twins[name]
    assert _graph(floe_t) == _graph(spark_t)
    assert _refs(floe_t) == _refs(spark_t)
    main = floe_t.metadata.current_snapshot_id
    assert [e.snapshot_id == main for e in floe_t.metadata.snapshot_log][-1:] == [True]


@pytest.mark.parametrize("name", NAMES)
def test_spark_reads_the_same_rows_on_every_ref(oracle: Any, twins: Any, name: str) -> None:
    floe_t, _ = twins[name]
    stmts = []
    refs = sorted(floe_t.metadata.refs)
    for suffix in ("floe", "spark"):
        t = f"oracle.{NS}.{name}_{suffix}"
        stmts += [f"SELECT id, s FROM {t} VERSION AS OF '{r}'" for r in refs]
        stmts.append(f"SELECT id, s FROM {t}")
    got = oracle.sql(stmts, all=True)
    half = len(got) // 2
    for ref, a, b in zip([*refs, "current"], got[:half], got[half:], strict=True):
        assert Counter(r["id"] for r in a) == Counter(r["id"] for r in b), ref
