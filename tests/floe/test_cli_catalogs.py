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
