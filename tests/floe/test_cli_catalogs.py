"""The floe command on ``CATALOG:namespace.table`` arguments (catalogs from FLOE_CATALOGS)."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.base import TableIdentifier
from floe.catalog.config import load_catalog
from floe.cli import main


@pytest.fixture
def catalogs(tmp_path, monkeypatch):
    config = tmp_path / "catalogs.toml"
    config.write_text(
        f'[catalogs.lake]\ntype = "filesystem"\nwarehouse = "{tmp_path / "fs"}"\n\n'
        f'[catalogs.meta]\ntype = "sql"\nuri = "sqlite:///{tmp_path / "cat.db"}"\n'
        f'warehouse = "{tmp_path / "sqlwh"}"\n'
    )
    monkeypatch.setenv("FLOE_CATALOGS", str(config))
    rows = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]}), rows)
    return config, rows


def run(capsys, *args):
    assert main(list(args)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


@pytest.mark.parametrize("catalog", ["lake", "meta"])
def test_create_append_and_read_through_a_catalog(catalogs, capsys, catalog):
    config, rows = catalogs
    if catalog == "meta":
        load_catalog("meta", str(config)).create_namespace(("db",))
    table = f"{catalog}:db.events"
    run(capsys, "create", table, "--schema-from", str(rows), "--partition-by", "bucket(2, id)")
    run(capsys, "append", table, str(rows))
    run(capsys, "append", table, str(rows))

    doc = json.loads(run(capsys, "describe", table, "--json"))
    assert doc["snapshot_count"] == 2
    snaps = json.loads(run(capsys, "snapshots", table, "--json"))
    assert snaps[-1]["summary"]["total-records"] == "6"
    files = json.loads(run(capsys, "files", table, "--json"))
    assert sum(f["record_count"] for f in files) == 6
    lines = run(capsys, "scan", table, "--filter", "id = 2", "--output", "-").splitlines()
    assert [json.loads(line)["s"] for line in lines] == ["b", "b"]

    loaded = load_catalog(catalog, str(config)).load_table(TableIdentifier(("db",), "events"))
    assert loaded.metadata_location == doc["metadata_location"]


def test_unknown_catalog_is_a_one_line_error(catalogs, capsys):
    assert main(["describe", "nowhere:db.t"]) != 0
    err = capsys.readouterr().err.strip()
    assert "nowhere" in err and len(err.splitlines()) == 1


def test_a_broken_entry_is_named_only_when_it_is_asked_for(catalogs, capsys, tmp_path):
    config, rows = catalogs
    with config.open("a") as f:
        f.write('\n[catalogs.broken]\ntype = "hive"\nuri = "thrift://metastore:9083"\n'
                f'\n[catalogs.down]\ntype = "sql"\nuri = "sqlite:///{tmp_path / "no/dir/c.db"}"\n'
                '\n[catalogs.unset]\ntype = "sql"\nuri = "${FLOE_TEST_NEVER_SET}"\n')
    run(capsys, "create", "lake:db.events", "--schema-from", str(rows))
    run(capsys, "append", "lake:db.events", str(rows))
    doc = json.loads(run(capsys, "describe", "lake:db.events", "--json"))
    assert doc["snapshot_count"] == 1 and capsys.readouterr().err == ""
    for name, problem in (("broken", "type must be one of"),
                          ("down", "unable to open database file"),
                          ("unset", "environment variable FLOE_TEST_NEVER_SET is not set")):
        assert main(["describe", f"{name}:db.t"]) != 0
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"catalog '{name}'" in err and problem in err, err


def test_a_table_configured_only_for_pyiceberg(tmp_path, monkeypatch, capsys):
    """No floe file at all: `floe describe CATALOG:ns.t` finds the catalog in PyIceberg's
    .pyiceberg.yaml, and a commit of floe's is read back by PyIceberg through the same file."""
    from pyiceberg.catalog.sql import SqlCatalog as PyIcebergSql

    monkeypatch.delenv("FLOE_CATALOGS", raising=False)
    monkeypatch.delenv("FLOE_WAREHOUSE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    db, wh = tmp_path / "py.db", tmp_path / "pywh"
    (tmp_path / "home" / ".pyiceberg.yaml").write_text(
        f"catalog:\n  py:\n    uri: sqlite:///{db}\n    warehouse: file://{wh}\n")
    theirs = PyIcebergSql("py", uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
    theirs.create_namespace("db")
    data = pa.table({"id": pa.array([1, 2], pa.int64())})
    theirs.create_table("db.t", schema=data.schema).append(data)

    doc = json.loads(run(capsys, "describe", "py:db.t", "--json"))
    assert doc["metadata_location"] == theirs.load_table("db.t").metadata_location
    rows = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": pa.array([3], pa.int64())}), rows)
    run(capsys, "append", "py:db.t", str(rows))
    assert sorted(theirs.load_table("db.t").scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
