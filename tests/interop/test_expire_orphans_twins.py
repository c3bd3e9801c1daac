"""floe's expire snapshots and remove orphan files against Spark + Iceberg Java's procedures,
on twin tables.

Spark builds every table twice (``<name>_f`` and ``<name>_s``) with the same statements: v1
and v2, merge-on-read deletes and updates (v2; copy-on-write in v1), Java equality deletes
(v2), a schema and a partition-spec change, table statistics, a branch with commits, tags;
the same ref retention settings are then given to both copies. floe expires one copy and
``CALL oracle.system.expire_snapshots`` the other, twice: with explicit ``snapshot_ids``,
then with ``older_than`` (between the same two commits of each copy), ``retain_last`` and
``clean_expired_metadata``. Snapshot ids and file names differ between the copies, so
snapshots are compared by their position in the snapshot list and files by what references
them: after each step both copies must keep the same snapshot positions, refs, schemas and
specs; in each copy the files on disk must be exactly the files its remaining snapshots
reference; and the files of each kind, keyed by the positions of the snapshots that
reference them, must be the same multiset in both copies. Then the same orphans (by relative
path, some hidden, everything made 10 days old) are planted in both copies: floe's dry run
must list exactly what floe then deletes and what Spark's ``remove_orphan_files`` dry run
reports for its copy. Spark finally reads the same rows from both copies on every ref.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from floe.catalog.filesystem import FileSystemCatalog
from floe.io import local_path
from floe.maintenance.expire import ExpireResult, expire_snapshots
from floe.maintenance.orphans import remove_orphan_files
from floe.scan.manifests import ManifestScanner
from floe.manifest import read_manifest, read_manifest_list
from floe.table import Table

pytestmark = pytest.mark.interop

NS = "db"
DAY_MS = 86_400_000
VERSIONS = (1, 2)
ORPHANS = [  # relative to the table location; the hidden ones are never orphans
    "data/s=a/orphan-old.parquet",
    "data/s=b/deep/er/orphan.parquet",
    "metadata/orphan-m0.avro",
    "metadata/snap-1-1-orphan.avro",
    "stray.txt",
    "data/orphan.crc",
]
HIDDEN = ["data/.orphan.parquet.crc", "data/_SUCCESS", ".hidden/orphan.parquet",
          "data/_tmp/orphan.parquet"]


def _values(lo: int, hi: int, x: bool = False) -> str:
    s = "abc"
    return ", ".join(f"({i}, '{s[i % 3]}'" + (f", {i * 10})" if x else ")") for i in range(lo, hi))


def _build(table: str, fv: int) -> tuple[list[str], list[str]]:
    """Spark statements before and after the equality deletes (v2)."""
    mode = "merge-on-read" if fv == 2 else "copy-on-write"
    props = {"format-version": str(fv), "write.delete.mode": mode, "write.update.mode": mode,
             "commit.manifest.min-count-to-merge": "3"}
    tbl = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
    first = [
        f"CREATE TABLE {table} (id bigint, s string) USING iceberg PARTITIONED BY (s) "
        f"TBLPROPERTIES ({tbl})",
        f"INSERT INTO {table} VALUES {_values(0, 6)}",
        f"INSERT INTO {table} VALUES {_values(6, 12)}",
        f"CALL oracle.system.compute_table_stats(table => '{table.removeprefix('oracle.')}')",
        f"CALL oracle.system.compute_partition_stats(table => "
        f"'{table.removeprefix('oracle.')}')",
        f"INSERT INTO {table} VALUES {_values(12, 18)}",
        f"ALTER TABLE {table} CREATE TAG tag_keep",
        f"DELETE FROM {table} WHERE id = 2",
        f"ALTER TABLE {table} CREATE TAG tag_stale",
        f"ALTER TABLE {table} ADD COLUMN x bigint",
        f"INSERT INTO {table} VALUES {_values(18, 24, x=True)}",
        f"ALTER TABLE {table} CREATE BRANCH dev",
        f"INSERT INTO {table}.branch_dev VALUES {_values(100, 103, x=True)}",
        f"DELETE FROM {table}.branch_dev WHERE id = 101",
        f"INSERT INTO {table}.branch_dev VALUES {_values(103, 105, x=True)}",
        f"ALTER TABLE {table} ADD PARTITION FIELD bucket(2, id)",
        f"INSERT INTO {table} VALUES {_values(24, 30, x=True)}",
        f"DELETE FROM {table} WHERE id < 9",
        f"ALTER TABLE {table} CREATE BRANCH old",
    ]
    ident = table.removeprefix("oracle.")
    # compaction, so that delete files and rewritten data files fall out of the table
    rewrites = [f"CALL oracle.system.rewrite_data_files(table => '{ident}', "
                f"where => 's = \"b\"', options => map('rewrite-all', 'true'))"]
    if fv == 2:
        rewrites.append(f"CALL oracle.system.rewrite_position_delete_files(table => '{ident}', "
                        f"options => map('rewrite-all', 'true'))")
    second = [
        f"UPDATE {table} SET x = 0 WHERE id = 15",
        *rewrites,
        f"INSERT INTO {table} VALUES {_values(30, 33, x=True)}",
        f"DELETE FROM {table} WHERE id = 31",
        f"INSERT INTO {table} VALUES {_values(33, 36, x=True)}",
        f"INSERT INTO {table}.branch_old VALUES {_values(200, 202, x=True)}",
        f"INSERT INTO {table} VALUES {_values(36, 39, x=True)}",
        f"CALL oracle.system.compute_table_stats(table => '{table.removeprefix('oracle.')}')",
        f"DELETE FROM {table} WHERE id = 37",
        f"INSERT INTO {table} VALUES {_values(39, 42, x=True)}",
        f"DELETE FROM {table} WHERE id = 40",
        f"INSERT INTO {table} VALUES {_values(42, 45, x=True)}",
        f"CALL oracle.system.compute_partition_stats(table => "
        f"'{table.removeprefix('oracle.')}')",
    ]
    return first, second


def _timestamp(ms: int) -> str:
    """A Spark SQL timestamp literal (the oracle's session time zone is UTC): procedure
    arguments must be literals."""
    import datetime

    t = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return f"TIMESTAMP '{t.strftime('%Y-%m-%d %H:%M:%S')}.{ms % 1000:03d}'"


def _names(fv: int) -> tuple[str, str]:
    return f"eo_v{fv}_f", f"eo_v{fv}_s"


# -- comparing the copies -----------------------------------------------------------------------


def _positions(t: Table) -> dict[int, int]:
    return {s.snapshot_id: i for i, s in enumerate(t.metadata.snapshots)}


def _state(t: Table, original: list[int]) -> dict[str, Any]:
    """Positions (in the original snapshot list) of the remaining snapshots, refs, schema and
    spec ids."""
    pos = {sid: i for i, sid in enumerate(original)}
    md = t.metadata
    return {
        "snapshots": [pos[s.snapshot_id] for s in md.snapshots],
        "refs": {n: (pos[r.snapshot_id], str(r.ref_type), r.min_snapshots_to_keep,
                     r.max_snapshot_age_ms, r.max_ref_age_ms) for n, r in md.refs.items()},
        "schemas": [s.schema_id for s in md.schemas],
        "specs": [s.spec_id for s in md.partition_specs],
        "statistics": sorted(pos[s.snapshot_id] for s in md.statistics),
    }


def _referenced(t: Table, original: list[int]) -> dict[str, tuple[str, frozenset[int]]]:
    """Every file the remaining snapshots reference (relative path → kind and the original
    positions of the snapshots referencing it)."""
    pos = {sid: i for i, sid in enumerate(original)}
    root = local_path(t.location).rstrip("/") + "/"
    out: dict[str, list[Any]] = {}

    def add(path: str, kind: str, p: int) -> None:
        rel = local_path(path).removeprefix(root)
        entry = out.setdefault(rel, [kind, set()])
        assert entry[0] == kind, rel
        entry[1].add(p)

    for snap in t.metadata.snapshots:
        p = pos[snap.snapshot_id]
        add(snap.manifest_list, "manifest list", p)
        for m in read_manifest_list(t.io, snap.manifest_list):
            add(m.manifest_path, "manifest", p)
            for e in read_manifest(t.io, m, discard_deleted=True):
                add(e.data_file.file_path, str(e.data_file.content.name).lower(), p)
    for s in t.metadata.statistics + t.metadata.partition_statistics:
        add(s.statistics_path, "statistics", pos[s.snapshot_id])
    return {k: (v[0], frozenset(v[1])) for k, v in out.items()}


def _on_disk(t: Table) -> tuple[set[str], set[str]]:
    """(files, hidden files) under the table, relative, without metadata JSON files and the
    version hint."""
    root = Path(local_path(t.location))
    files, hidden = set(), set()
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        rel = str(p.relative_to(root))
        if any(part.startswith((".", "_")) for part in p.relative_to(root).parts):
            hidden.add(rel)
        elif not rel.endswith(".metadata.json") and rel != "metadata/version-hint.text":
            files.add(rel)
    return files, hidden


def _check_copy(t: Table, original: list[int]) -> Counter[tuple[str, frozenset[int]]]:
    """The files on disk are exactly those the remaining snapshots reference; no checksum
    file is left without its file. Returns the files as (kind, positions) counts."""
    t.refresh()
    ref = _referenced(t, original)
    files, hidden = _on_disk(t)
    assert files == set(ref), (sorted(files - set(ref)), sorted(set(ref) - files))
    for h in hidden:
        if h.endswith(".crc") and "/." in f"/{h}":
            head, _, name = h.rpartition("/")
            main = f"{head}/{name[1:-4]}" if head else name[1:-4]
            assert os.path.exists(Path(local_path(t.location)) / main), h
    return Counter(ref.values())


def _deleted_counts(r: ExpireResult) -> dict[str, int]:
    return {"deleted_data_files_count": len(r.data_files),
            "deleted_position_delete_files_count": len(r.position_delete_files),
            "deleted_equality_delete_files_count": len(r.equality_delete_files),
            "deleted_manifest_files_count": len(r.manifests),
            "deleted_manifest_lists_count": len(r.manifest_lists),
            "deleted_statistics_files_count": len(r.statistics_files)
            + len(r.partition_statistics_files)}


def _age_all(t: Table, ms: int) -> None:
    when = (time.time() * 1000 - ms) / 1000
    for p in Path(local_path(t.location)).rglob("*"):
        if p.is_file():
            os.utime(p, (when, when))


# -- the twins ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def twins(oracle: Any) -> dict[str, Any]:
    catalog = FileSystemCatalog("twins", str(oracle.warehouse))
    phases = {fv: {n: _build(f"oracle.{NS}.{n}", fv) for n in _names(fv)} for fv in VERSIONS}
    oracle.sql([s for fv in VERSIONS for n in _names(fv) for s in phases[fv][n][0]])
    for n in _names(2):
        oracle.equality_delete(f"{NS}.{n}", "id", ["20", "26"])
    oracle.sql([s for fv in VERSIONS for n in _names(fv) for s in phases[fv][n][1]])
    out: dict[str, Any] = {}
    spark_calls: list[str] = []
    for fv in VERSIONS:
        f_name, s_name = _names(fv)
        tables = {n: catalog.load_table(f"{NS}.{n}") for n in (f_name, s_name)}
        for t in tables.values():
            # ms-precise retention, the same on both copies: the stale tag and branch expire,
            # dev keeps 2 snapshots whatever their age
            t.manage_snapshots().set_retention("tag_stale", max_ref_age_ms=1) \
                .set_retention("old", max_ref_age_ms=1) \
                .set_retention("dev", min_snapshots_to_keep=2, max_snapshot_age_ms=1).commit()
        original = {n: [s.snapshot_id for s in t.metadata.snapshots] for n, t in tables.items()}
        assert len(original[f_name]) == len(original[s_name]) >= 20
        out[fv] = {"tables": tables, "original": original, "steps": []}
    # step 1: explicit ids (a middle main ancestor and dev's first commit)
    for fv in VERSIONS:
        f_name, s_name = _names(fv)
        f = out[fv]["tables"][f_name]
        snaps = f.metadata.snapshots
        held = {r.snapshot_id for r in f.metadata.refs.values()}
        dev_first = next(i for i, s in enumerate(snaps) if s.summary.get("added-records") == "3"
                         and s.snapshot_id not in held and i >= 5)
        chosen = [1, dev_first]
        assert not {snaps[i].snapshot_id for i in chosen} & held
        out[fv]["ids"] = chosen
        dry = expire_snapshots(f, snapshot_ids=[snaps[i].snapshot_id for i in chosen],
                               dry_run=True)
        real = expire_snapshots(f, snapshot_ids=[snaps[i].snapshot_id for i in chosen])
        out[fv]["steps"].append({"dry": dry, "floe": real})
        s_ids = [out[fv]["original"][s_name][i] for i in chosen]
        spark_calls.append(f"CALL oracle.system.expire_snapshots(table => '{NS}.{s_name}', "
                           f"snapshot_ids => array({', '.join(map(str, s_ids))}))")
    got = oracle.sql(spark_calls, all=True)
    for k, fv in enumerate(VERSIONS):
        out[fv]["steps"][0]["spark"] = got[k][0]
        out[fv]["steps"][0]["state"] = _snapshot_state(out[fv])
    # step 2: older than a commit in the middle, keep 2 per branch, clean unused metadata
    spark_calls = []
    for fv in VERSIONS:
        for t in out[fv]["tables"].values():
            t.manage_snapshots().remove_tag("tag_keep").commit()  # frees schema 0
        f_name, s_name = _names(fv)
        cut = {}
        for n in (f_name, s_name):
            t = out[fv]["tables"][n].refresh()
            by_id = {s.snapshot_id: s for s in t.metadata.snapshots}
            ids = out[fv]["original"][n]
            a, b = by_id[ids[14]], by_id[ids[15]]
            cut[n] = (a.timestamp_ms + b.timestamp_ms) // 2
            assert a.timestamp_ms < cut[n] <= b.timestamp_ms
        f = out[fv]["tables"][f_name]
        kwargs = dict(older_than_ms=cut[f_name], retain_last=2, clean_expired_metadata=True)
        dry = expire_snapshots(f, dry_run=True, **kwargs)
        real = expire_snapshots(f, **kwargs)
        out[fv]["steps"].append({"dry": dry, "floe": real})
        spark_calls.append(
            f"CALL oracle.system.expire_snapshots(table => '{NS}.{s_name}', older_than => "
            f"{_timestamp(cut[s_name])}, retain_last => 2, "
            f"clean_expired_metadata => true)")
    got = oracle.sql(spark_calls, all=True)
    for k, fv in enumerate(VERSIONS):
        out[fv]["steps"][1]["spark"] = got[k][0]
        out[fv]["steps"][1]["state"] = _snapshot_state(out[fv])
    # orphans: the same files in both copies, everything 10 days old
    spark_calls = []
    for fv in VERSIONS:
        for n, t in out[fv]["tables"].items():
            root = Path(local_path(t.location))
            for rel in ORPHANS + HIDDEN:
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_bytes(b"orphan")
            _age_all(t, 10 * DAY_MS)
        f_name, s_name = _names(fv)
        f = out[fv]["tables"][f_name]
        older = int(time.time() * 1000) - 5 * DAY_MS
        out[fv]["orphans_dry"] = remove_orphan_files(f, older_than_ms=older, dry_run=True)
        out[fv]["orphans"] = remove_orphan_files(f, older_than_ms=older)
        out[fv]["orphans_root"] = {n: local_path(t.location) for n, t in
                                   out[fv]["tables"].items()}
        spark_calls.append(f"CALL oracle.system.remove_orphan_files(table => '{NS}.{s_name}', "
                           f"older_than => {_timestamp(older)}, dry_run => true)")
    got = oracle.sql(spark_calls, all=True)
    for k, fv in enumerate(VERSIONS):
        out[fv]["spark_orphans"] = [r["orphan_file_location"] for r in got[k]]
    # Spark reads every ref of both copies
    reads = []
    for fv in VERSIONS:
        for n in _names(fv):
            t = out[fv]["tables"][n].refresh()
            refs = sorted(t.metadata.refs)
            reads += [f"SELECT * FROM oracle.{NS}.{n} VERSION AS OF '{r}'" for r in refs]
            out[fv].setdefault("refs", refs)
    got = oracle.sql(reads, all=True)
    k = 0
    for fv in VERSIONS:
        rows = {}
        for n in _names(fv):
            rows[n] = got[k:k + len(out[fv]["refs"])]
            k += len(out[fv]["refs"])
        out[fv]["rows"] = rows
    return out


def _snapshot_state(twin: dict[str, Any]) -> dict[str, Any]:
    state = {}
    for n, t in twin["tables"].items():
        t.refresh()
        state[n] = {"metadata": _state(t, twin["original"][n]),
                    "files": _check_copy(t, twin["original"][n])}
    return state


@pytest.mark.parametrize("fv", VERSIONS)
@pytest.mark.parametrize("step", [0, 1])
def test_same_snapshots_refs_and_metadata(twins: dict[str, Any], fv: int, step: int) -> None:
    f_name, s_name = _names(fv)
    state = twins[fv]["steps"][step]["state"]
    assert state[f_name]["metadata"] == state[s_name]["metadata"]
    floe = twins[fv]["steps"][step]["floe"]
    assert floe.expired_snapshot_ids  # the step did expire something
    if step == 1:
        assert floe.removed_schema_ids == (0,)
        assert floe.data_files and (fv == 1 or floe.position_delete_files)
    if step == 0:
        assert set(twins[fv]["ids"]) <= set(range(len(twins[fv]["original"][f_name]))) - set(
            state[f_name]["metadata"]["snapshots"])
        assert set(floe.removed_refs) == {"old", "tag_stale"}
        assert floe.statistics_files and floe.partition_statistics_files


@pytest.mark.parametrize("fv", VERSIONS)
@pytest.mark.parametrize("step", [0, 1])
def test_same_files_left(twins: dict[str, Any], fv: int, step: int) -> None:
    """Each copy holds exactly the files its snapshots reference (checked while building the
    state), and the copies hold the same files by kind and referencing positions."""
    f_name, s_name = _names(fv)
    state = twins[fv]["steps"][step]["state"]
    assert state[f_name]["files"] == state[s_name]["files"]


@pytest.mark.parametrize("fv", VERSIONS)
@pytest.mark.parametrize("step", [0, 1])
def test_same_counts_deleted_and_dry_run_is_the_run(twins: dict[str, Any], fv: int,
                                                    step: int) -> None:
    s = twins[fv]["steps"][step]
    assert s["dry"].files() == s["floe"].files()
    assert s["floe"].deleted_files == len(s["floe"].files()) and not s["floe"].failed
    assert _deleted_counts(s["floe"]) == s["spark"]


@pytest.mark.parametrize("fv", VERSIONS)
def test_same_orphans_as_spark(twins: dict[str, Any], fv: int) -> None:
    f_name, s_name = _names(fv)
    roots = twins[fv]["orphans_root"]
    dry, real = twins[fv]["orphans_dry"], twins[fv]["orphans"]
    assert dry.orphan_files == real.orphan_files and real.deleted_files == len(real.orphan_files)
    floe_rel = {local_path(p).removeprefix(roots[f_name] + "/") for p in dry.orphan_files}
    spark_rel = {local_path(p).removeprefix(roots[s_name] + "/")
                 for p in twins[fv]["spark_orphans"]}
    assert floe_rel == spark_rel == set(ORPHANS)
    for rel in ORPHANS:
        assert not (Path(roots[f_name]) / rel).exists()
        assert (Path(roots[s_name]) / rel).exists()  # Spark's was a dry run
    for rel in HIDDEN:
        assert (Path(roots[f_name]) / rel).exists()


@pytest.mark.parametrize("fv", VERSIONS)
def test_spark_reads_the_same_rows_on_every_ref(twins: dict[str, Any], fv: int) -> None:
    f_name, s_name = _names(fv)
    rows = twins[fv]["rows"]
    for ref, a, b in zip(twins[fv]["refs"], rows[f_name], rows[s_name], strict=True):
        assert Counter(tuple(r.values()) for r in a) == Counter(tuple(r.values()) for r in b), ref
        assert a, ref


@pytest.mark.parametrize("fv", VERSIONS)
def test_the_scan_reads_java_manifests_like_the_decoder(twins: dict[str, Any], fv: int) -> None:
    for t in twins[fv]["tables"].values():
        scanner = ManifestScanner(t.io, t.location)
        for snap in t.refresh().metadata.snapshots:
            for m in read_manifest_list(t.io, snap.manifest_list):
                decoded = {e.data_file.file_path: e.data_file.content
                           for e in read_manifest(t.io, m, discard_deleted=True)}
                assert scanner.live_files(m) == decoded
        assert scanner.scanned > 0
