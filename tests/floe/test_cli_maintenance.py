"""The maintenance commands (expire, remove-orphans, compact, rewrite-manifests) run as real
processes: a dry run lists exactly what the real run then deletes or rewrites, and a refused
run is a one-line error that leaves the table's folder as it was."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from floe.catalog.filesystem import directory_table
from tests.floe.test_cli_changes import floe, ids, make, parquet, setup, tree  # noqa: F401


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_expire_dry_run_then_real_run(tmp_path: Path, parquet: dict[str, Path]) -> None:
    table, snaps = make(tmp_path, parquet)
    floe("delete", str(table), "--filter", "id >= 10")  # copy-on-write: files leave the table
    before = ids(table)
    dry = json.loads(floe("expire", str(table), "--older-than", str(_now_ms()),
                          "--retain-last", "1", "--dry-run", "--json").stdout)
    assert dry["dry_run"] and not dry["committed"]
    assert sorted(dry["expired_snapshot_ids"]) == sorted(snaps)
    to_delete = (dry["data_files"] + dry["manifests"] + dry["manifest_lists"])
    assert dry["data_files"] and all(Path(p.removeprefix("file://")).exists()
                                     for p in to_delete)
    assert ids(table) == before
    real = json.loads(floe("expire", str(table), "--older-than", str(_now_ms()),
                           "--retain-last", "1", "--json").stdout)
    assert real["committed"] and real["expired_snapshot_ids"] == dry["expired_snapshot_ids"]
    for key in ("data_files", "manifests", "manifest_lists"):
        assert sorted(real[key]) == sorted(dry[key])
    assert real["deleted_files"] == len(to_delete)
    assert not any(Path(p.removeprefix("file://")).exists() for p in to_delete)
    assert ids(table) == before
    doc = json.loads(floe("describe", str(table), "--json").stdout)
    assert doc["snapshot_count"] == 1


def test_expire_text_output_and_age_syntax(tmp_path: Path, parquet: dict[str, Path]) -> None:
    table, _ = make(tmp_path, parquet)
    out = floe("expire", str(table), "--older-than", "1d", "--dry-run").stdout
    assert out.startswith("would expire 0 snapshot(s)")  # nothing is a day old
    out = floe("expire", str(table), "--older-than", "0s", "--retain-last", "2").stdout
    assert out.startswith("expired 1 snapshot(s)")
    assert json.loads(floe("describe", str(table), "--json").stdout)["snapshot_count"] == 2


def test_remove_orphans_dry_run_then_real_run(tmp_path: Path, parquet: dict[str, Path]) -> None:
    table, _ = make(tmp_path, parquet)
    orphan = table / "data" / "left-by-a-failed-job.parquet"
    orphan.write_bytes(b"PAR1 not really")
    old = time.time() - 4 * 86400
    os.utime(orphan, (old, old))
    before = ids(table)
    dry = json.loads(floe("remove-orphans", str(table), "--dry-run", "--json").stdout)
    assert [p.removeprefix("file://") for p in dry["orphan_files"]] == [str(orphan)]
    assert orphan.exists()
    out = floe("remove-orphans", str(table)).stdout
    assert "deleted: 1" in out and str(orphan) in out
    assert not orphan.exists() and ids(table) == before


@pytest.mark.parametrize("argv, error", [
    (["remove-orphans", "{t}", "--older-than", "1h"], "newer than 24 hours"),
    (["remove-orphans", "{t}", "--location", "/"], "is not inside the location"),
    (["expire", "{t}", "--retain-last", "0"], "retain_last must be at least 1"),
    (["expire", "{t}", "--older-than", "yesterday"], "expected milliseconds"),
    (["expire", "{t}", "--older-than", str(2 ** 62)], "in the future"),
])
def test_refused_maintenance_leaves_table_untouched(tmp_path: Path, parquet: dict[str, Path],
                                                    argv: list[str], error: str) -> None:
    table, _ = make(tmp_path, parquet)
    orphan = table / "data" / "old-orphan.parquet"
    orphan.write_bytes(b"x")
    os.utime(orphan, (0, 0))
    before = tree(table)
    run = floe(*[a.format(t=table) for a in argv], ok=False)
    assert run.returncode != 0 and error in run.stderr, run.stderr
    assert tree(table) == before


@pytest.mark.parametrize("command", ["expire", "compact", "rewrite-manifests",
                                     "rewrite-position-deletes", "remove-dangling-deletes",
                                     "compute-partition-stats"])
def test_a_table_without_snapshots_is_refused(tmp_path: Path, parquet: dict[str, Path],
                                              command: str) -> None:
    table = tmp_path / "empty"
    setup("create", str(table), "--schema-from", str(parquet["a"]), "--partition-by", "s")
    before = tree(table)
    run = floe(command, str(table), ok=False)
    assert run.returncode == 1 and "has no snapshots: nothing to" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and tree(table) == before


def test_compaction_filter_on_an_unknown_column_is_refused(tmp_path: Path,
                                                          parquet: dict[str, Path]) -> None:
    table, _ = make(tmp_path, parquet)
    before = tree(table)
    run = floe("compact", str(table), "--filter", "nope = 1", ok=False)
    assert "unknown column 'nope'" in run.stderr and tree(table) == before


def test_gc_disabled_refuses_expire_and_orphans(tmp_path: Path,
                                                parquet: dict[str, Path]) -> None:
    table, _ = make(tmp_path, parquet)
    directory_table(str(table)).set_properties({"gc.enabled": "false"})
    before = tree(table)
    for cmd in ("expire", "remove-orphans"):
        run = floe(cmd, str(table), "--older-than", str(_now_ms() - 86_400_000 * 2), ok=False)
        assert "gc.enabled is false" in run.stderr
    assert tree(table) == before


def test_compact_and_rewrite_manifests(tmp_path: Path, parquet: dict[str, Path]) -> None:
    table, _ = make(tmp_path, parquet, partition=None)
    before = ids(table)
    dry = json.loads(floe("compact", str(table), "--option", "min-input-files=2",
                          "--dry-run", "--json").stdout)
    planned = sorted(p for g in dry["groups"] for p in g["rewritten_files"])
    assert len(planned) == 3
    out = floe("compact", str(table), "--option", "min-input-files=2").stdout
    assert out.startswith("rewrote 3 data file(s)")
    assert ids(table) == before
    out = floe("rewrite-manifests", str(table)).stdout
    assert out.startswith("rewrote manifests:") or out.startswith("nothing to rewrite")
    assert ids(table) == before
