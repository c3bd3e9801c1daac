"""FileSystemCatalog: namespaces, tables, register / drop / purge, metadata log and clean-up,
and the bad inputs of issue 3 (clear errors, nothing written, nothing deleted)."""

import os
from pathlib import Path

import pyarrow as pa
import pytest

from floe.catalog.base import TableAlreadyExists, TableIdentifier, UnsupportedOperation
from floe.catalog.filesystem import FileSystemCatalog
from floe.errors import MetadataError, NotFound, ValidationError
from floe.schema import Schema
from floe.types import LONG, NestedField

SCHEMA = Schema(NestedField(1, "id", LONG, required=True))


def rows(*ids):
    return pa.table({"id": pa.array(ids, pa.int64())})


def snapshot_of_tree(root):
    out = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[p] = fh.read()
    return out


@pytest.fixture
def catalog(tmp_path):
    return FileSystemCatalog("fs", str(tmp_path / "wh"))


def test_namespaces_and_tables(catalog, tmp_path):
    catalog.create_namespace("db")
    catalog.create_namespace(("db", "inner"))
    catalog.create_table("db.t1", SCHEMA)
    catalog.create_table(("db", "inner", "t2"), SCHEMA)
    assert catalog.list_namespaces() == [("db",)]
    assert catalog.list_namespaces("db") == [("db", "inner")]
    assert catalog.list_tables("db") == [TableIdentifier(("db",), "t1")]
    assert catalog.list_tables("db.inner") == [TableIdentifier(("db", "inner"), "t2")]
    assert catalog.load_namespace_properties("db")["location"].endswith("/wh/db")
    assert catalog.table_exists("db.t1") and not catalog.table_exists("db.nope")
    with pytest.raises(ValidationError, match="not empty"):
        catalog.drop_namespace("db.inner")
    with pytest.raises(TableAlreadyExists):
        catalog.create_table("db.t1", SCHEMA)
    with pytest.raises(NotFound):
        catalog.load_table("db.nope")
    with pytest.raises(UnsupportedOperation):
        catalog.rename_table("db.t1", "db.t3")
    with pytest.raises(ValidationError, match="already exists"):
        catalog.create_namespace("db")
    with pytest.raises(ValidationError, match="cannot create it at"):
        catalog.create_table("db.t9", SCHEMA, location=str(tmp_path / "elsewhere"))


def test_commit_publishes_versions_and_hint(catalog, tmp_path):
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(1)).append(rows(2))
    meta = tmp_path / "wh" / "db" / "t" / "metadata"
    assert t.metadata_location == str(meta / "v3.metadata.json")
    assert (meta / "version-hint.text").read_text() == "3"
    assert [e.metadata_file for e in t.metadata.metadata_log] == [
        str(meta / "v1.metadata.json"), str(meta / "v2.metadata.json")]
    # a stale hint and Hadoop .crc side files do not matter
    (meta / "version-hint.text").write_text("1")
    (meta / ".v9.metadata.json.crc").write_bytes(b"crc")
    assert catalog.load_table("db.t").metadata_location.endswith("v3.metadata.json")
    catalog.load_table("db.t").append(rows(3))
    assert catalog.metadata_location("db.t").endswith("v4.metadata.json")


def test_delete_after_commit_keeps_previous_versions_max(catalog, tmp_path):
    t = catalog.create_table("db.t", SCHEMA, properties={
        "write.metadata.previous-versions-max": "2",
        "write.metadata.delete-after-commit.enabled": "true"})
    for i in range(5):
        t.append(rows(i))
    meta = tmp_path / "wh" / "db" / "t" / "metadata"
    versions = sorted(p.name for p in meta.glob("v*.metadata.json"))
    assert versions == ["v4.metadata.json", "v5.metadata.json", "v6.metadata.json"]
    assert len(t.metadata.metadata_log) == 2


def test_without_delete_after_commit_old_versions_stay(catalog, tmp_path):
    t = catalog.create_table("db.t", SCHEMA,
                             properties={"write.metadata.previous-versions-max": "1"})
    for i in range(3):
        t.append(rows(i))
    assert len(list((tmp_path / "wh" / "db" / "t" / "metadata").glob("v*.metadata.json"))) == 4
    assert len(t.metadata.metadata_log) == 1


def test_drop_register_and_purge(catalog, tmp_path):
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(1, 2))
    data = [p for p in snapshot_of_tree(tmp_path / "wh" / "db" / "t" / "data")]
    copy = tmp_path / "saved.metadata.json"
    copy.write_bytes(Path(t.metadata_location).read_bytes())
    catalog.drop_table("db.t")  # without purge: data stays
    assert not catalog.table_exists("db.t") and all(os.path.exists(p) for p in data)
    registered = catalog.register_table("db.r", str(copy))
    assert registered.current_snapshot().summary["total-records"] == "2"
    with pytest.raises(TableAlreadyExists):
        catalog.register_table("db.r", str(copy))
    u = catalog.create_table("db.u", SCHEMA)
    u.append(rows(3))
    u_files = list(snapshot_of_tree(tmp_path / "wh" / "db" / "u"))
    catalog.drop_table("db.u", purge=True)
    assert not any(os.path.exists(p) for p in u_files)


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["db/x.t", "db.a/b", "..", "db...t", "db.", ".db.t", "db..",
                                  "db.t\x00", "db.../etc", "db.\\t"])
def test_bad_names_write_nothing(catalog, tmp_path, name):
    with pytest.raises(ValidationError, match="invalid"):
        catalog.create_table(name, SCHEMA)
    with pytest.raises(ValidationError):
        catalog.load_table(name)
    assert not os.path.exists(tmp_path / "wh")
    with pytest.raises(ValidationError):
        catalog.create_namespace(name)
    assert not os.path.exists(tmp_path / "wh")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_current_metadata_is_a_clear_error(catalog, tmp_path, damage):
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(1))
    current = t.metadata_location
    content = Path(current).read_bytes()
    with open(current, "wb") as f:
        f.write({"truncate": content[: len(content) // 2], "garbage": b"\x00\xffnot json",
                 "empty": b""}[damage])
    before = snapshot_of_tree(tmp_path)
    with pytest.raises(MetadataError, match="v2.metadata.json"):
        catalog.load_table("db.t")
    with pytest.raises(MetadataError, match="v2.metadata.json"):
        t.append(rows(2))  # a writer holding the old state refreshes and stops
    assert snapshot_of_tree(tmp_path) == before


def test_hint_pointing_nowhere(catalog, tmp_path):
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows(1))
    meta = tmp_path / "wh" / "db" / "t" / "metadata"
    (meta / "version-hint.text").write_text("42")
    assert catalog.load_table("db.t").metadata_location.endswith("v2.metadata.json")
    (meta / "version-hint.text").write_text("not a number")
    assert catalog.load_table("db.t").metadata_location.endswith("v2.metadata.json")
    for p in meta.glob("v*.metadata.json"):
        p.unlink()
    before = snapshot_of_tree(tmp_path)
    with pytest.raises(NotFound, match="does not exist"):
        catalog.load_table("db.t")
    with pytest.raises(NotFound):
        t.append(rows(2))
    assert snapshot_of_tree(tmp_path) == before


def test_bad_table_properties_are_clear(catalog):
    t = catalog.create_table("db.t", SCHEMA, properties={"commit.retry.num-retries": "many"})
    with pytest.raises(ValidationError, match="commit.retry.num-retries"):
        t.set_properties({"a": "b"})
