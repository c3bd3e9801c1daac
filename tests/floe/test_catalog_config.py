"""floe.catalog.config: catalogs from a TOML file, and CLI table arguments resolved through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from floe.catalog.base import TableIdentifier
from floe.catalog.config import (
    CatalogConfig,
    load_catalog,
    load_catalogs,
    parse_catalogs,
    parse_table_arg,
    resolve_catalog_table,
    resolve_table_arg,
)
from floe.catalog.sql import SqlCatalog
from floe.errors import NotFound, ValidationError
from floe.io import FileIO
from floe.schema import Schema
from floe.table import Table
from floe.types import LONG, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True))


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FLOE_CATALOGS", raising=False)
    monkeypatch.delenv("FLOE_WAREHOUSE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def write_config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "conf" / "catalogs.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return path


def test_load_catalogs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CAT_DB", str(tmp_path / "c.db"))
    path = write_config(tmp_path, """
[catalogs.local]
type = "filesystem"
warehouse = "wh"

[catalogs.prod]
type = "sql"
uri = "sqlite:///${CAT_DB}"
warehouse = "/abs/wh"
""")
    configs = load_catalogs(path)
    assert configs["local"] == CatalogConfig(
        "local", "filesystem", {"warehouse": str(tmp_path / "conf" / "wh")}, str(path))
    assert configs["prod"].options == {"uri": f"sqlite:///{tmp_path}/c.db",
                                       "warehouse": "/abs/wh"}
    # FLOE_CATALOGS names the default file
    monkeypatch.setenv("FLOE_CATALOGS", str(path))
    assert load_catalogs() == configs


def test_default_file_and_floe_warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    assert load_catalogs() == {}  # no ~/.floe/catalogs.toml: no catalogs
    monkeypatch.setenv("FLOE_WAREHOUSE", str(tmp_path / "wh"))
    assert load_catalogs()["local"].options == {"warehouse": str(tmp_path / "wh")}
    home_conf = tmp_path / "home" / ".floe" / "catalogs.toml"
    home_conf.parent.mkdir(parents=True)
    home_conf.write_text('[catalogs.local]\ntype = "filesystem"\nwarehouse = "/configured"\n')
    assert load_catalogs()["local"].options == {"warehouse": "/configured"}
    monkeypatch.setenv("FLOE_CATALOGS", str(tmp_path / "missing.toml"))
    with pytest.raises(NotFound, match="missing.toml"):
        load_catalogs()


@pytest.mark.parametrize("body, problem", [
    ('[catalogs.x]\ntype = "hive"\n', "type must be one of"),
    ('[catalogs.x]\ntype = "sql"\n', "missing option"),
    ('[catalogs.x]\ntype = "sql"\nuri = "sqlite://"\nurl = "typo"\n', "unknown option 'url'"),
    ('[catalogs.x]\ntype = "filesystem"\nwarehouse = 3\n', "must be a string"),
    ('[catalogs.x]\ntype = "sql"\nuri = "${FLOE_TEST_UNSET_VAR}"\n', "FLOE_TEST_UNSET_VAR"),
    ('[catalogs."a b"]\ntype = "filesystem"\nwarehouse = "/w"\n', "names are letters"),
    ('[catalog.x]\ntype = "filesystem"\n', "unknown top-level keys"),
    ('[catalogs.x\n', "not a valid TOML file"),
])
def test_bad_configuration_is_a_clear_error(tmp_path: Path, body: str, problem: str):
    path = write_config(tmp_path, body)
    with pytest.raises(ValidationError, match=problem) as info:
        load_catalogs(path)
    assert str(path) in str(info.value)


def test_load_catalog(tmp_path: Path):
    path = write_config(tmp_path, f"""
[catalogs.fs]
type = "filesystem"
warehouse = "{tmp_path / 'fs'}"

[catalogs.sq]
type = "sql"
uri = "sqlite:///{tmp_path / 'c.db'}"
warehouse = "{tmp_path / 'sq'}"
""")
    with load_catalog("sq", path) as sq:
        assert isinstance(sq, SqlCatalog) and sq.name == "sq"
        assert sq.warehouse == str(tmp_path / "sq")
    with load_catalog("fs", load_catalogs(path)) as fs:
        assert type(fs).__name__ == "FileSystemCatalog"
    with pytest.raises(NotFound, match="configured: fs, sq"):
        load_catalog("nope", path)


@pytest.mark.parametrize("arg, expected", [
    ("prod:sales.orders", ("prod", TableIdentifier(("sales",), "orders"))),
    ("p-1:a.b.t", ("p-1", TableIdentifier(("a", "b"), "t"))),
    ("/data/wh/db/t", None),
    ("wh/db/t", None),
    ("file:/data/t/metadata/v1.metadata.json", None),
    ("t.metadata.json", None),
    ("C:\\data\\t", None),
])
def test_parse_table_arg(arg: str, expected):
    assert parse_table_arg(arg) == expected


def test_parse_table_arg_rejects_bad_names():
    with pytest.raises(ValidationError):
        parse_table_arg("prod:sales")  # no namespace
    with pytest.raises(ValidationError):
        parse_table_arg("prod:..x.t")


def test_resolve_table_arg(tmp_path: Path):
    path = write_config(tmp_path, f"""
[catalogs.sq]
type = "sql"
uri = "sqlite:///{tmp_path / 'c.db'}"
warehouse = "{tmp_path / 'wh'}"
""")
    with load_catalog("sq", path) as cat:
        cat.create_namespace("db")
        created = cat.create_table("db.t", SCHEMA)

    table = resolve_table_arg("sq:db.t", path)
    try:
        assert isinstance(table, Table) and table.metadata_location == created.metadata_location
    finally:
        table.catalog.close()

    io, location = resolve_table_arg(created.metadata_location, path)
    assert isinstance(io, FileIO) and location == created.metadata_location

    with pytest.raises(NotFound):
        resolve_table_arg("sq:db.missing", path)
    with pytest.raises(NotFound, match="no catalog named 'other'"):
        resolve_table_arg("other:db.t", path)
    resolved = resolve_catalog_table("sq:db.new", path)
    assert resolved is not None
    catalog, ident = resolved
    with catalog:
        assert ident == TableIdentifier(("db",), "new") and not catalog.table_exists(ident)


def test_parse_catalogs_from_a_mapping():
    configs = parse_catalogs({"catalogs": {"m": {"type": "sql", "uri": "sqlite://"}}})
    assert configs["m"].options == {"uri": "sqlite://"}
