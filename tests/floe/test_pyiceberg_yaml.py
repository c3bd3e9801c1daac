"""One ``.pyiceberg.yaml`` (secrets in ``PYICEBERG_CATALOG__…`` variables, as a PyIceberg user
keeps them) used by PyIceberg 0.12's ``load_catalog`` and by the ``floe`` command, with no
floe catalog file: both see the same tables, and each reads what the other committed.

PyIceberg runs in its own process (it reads its configuration once, at import), in the
environment the ``floe`` command runs in. The SQL catalog (SQLite, an s3 warehouse on moto)
always; the REST catalog (SeaweedFS) once floe has a REST client (``floe.catalog.rest``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from floe.catalog.config import CATALOG_TYPES, load_catalogs
from floe.cli import main
from tests.object_store import MotoS3, SeaweedFS, unique_name

pytestmark = pytest.mark.objectstore

PYICEBERG_SCRIPT = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    from pyiceberg.catalog import load_catalog

    name, action, ident = sys.argv[1:4]
    catalog = load_catalog(name)
    if action == "create":
        catalog.create_namespace_if_not_exists(ident.rsplit(".", 1)[0])
        data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
        catalog.create_table(ident, schema=data.schema).append(data)
    table = catalog.load_table(ident)
    print(json.dumps({
        "metadata_location": table.metadata_location,
        "tables": sorted(".".join(t) for t in catalog.list_tables(ident.rsplit(".", 1)[0])),
        "ids": sorted(table.scan().to_arrow()["id"].to_pylist()),
    }))
""")


@pytest.fixture
def no_floe_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No floe catalog file, no FLOE_WAREHOUSE; PYICEBERG_HOME is the returned directory."""
    for name in ("FLOE_CATALOGS", "FLOE_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.upper().startswith("PYICEBERG_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "pyiceberg-home"
    home.mkdir()
    monkeypatch.setenv("PYICEBERG_HOME", str(home))
    return home


def pyiceberg(catalog: str, action: str, ident: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PYICEBERG_SCRIPT, catalog, action, ident],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def floe(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def same_tables_both_ways(capsys: pytest.CaptureFixture[str], tmp_path: Path, catalog: str,
                          namespace: str) -> None:
    ident = f"{namespace}.events"
    theirs = pyiceberg(catalog, "create", ident)
    assert theirs["ids"] == [1, 2, 3]

    described = json.loads(floe(capsys, "describe", f"{catalog}:{ident}", "--json"))
    assert described["metadata_location"] == theirs["metadata_location"]
    lines = floe(capsys, "scan", f"{catalog}:{ident}", "--output", "-").splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == [1, 2, 3]

    more = tmp_path / "more.parquet"
    pq.write_table(pa.table({"id": pa.array([4, 5], pa.int64()), "s": ["d", "e"]}), more)
    floe(capsys, "append", f"{catalog}:{ident}", str(more))
    after = json.loads(floe(capsys, "describe", f"{catalog}:{ident}", "--json"))

    theirs = pyiceberg(catalog, "read", ident)
    assert theirs["metadata_location"] == after["metadata_location"]
    assert theirs["ids"] == [1, 2, 3, 4, 5] and theirs["tables"] == [ident]


def test_a_sql_catalog_over_s3_from_one_pyiceberg_yaml(
        no_floe_file: Path, moto_s3: MotoS3, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    props = moto_s3.s3_properties()
    secret = props.pop("s3.secret-access-key")
    (no_floe_file / ".pyiceberg.yaml").write_text(textwrap.dedent(f"""\
        catalog:
          lake:
            uri: sqlite:///{tmp_path / 'catalog.db'}
            warehouse: s3://{moto_s3.bucket}/{unique_name('wh')}
        """) + "".join(f"    {k}: '{v}'\n" for k, v in props.items()))
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__S3__SECRET_ACCESS_KEY", secret)
    config = load_catalogs()["lake"]
    assert config.type == "sql" and config.problem is None
    assert config.options["s3.secret-access-key"] == secret
    same_tables_both_ways(capsys, tmp_path, "lake", unique_name("db"))


def test_a_rest_catalog_from_one_pyiceberg_yaml(
        no_floe_file: Path, seaweedfs: SeaweedFS, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    if "rest" not in CATALOG_TYPES:
        pytest.skip("floe has no REST catalog client yet (floe.catalog.rest)")
    props = seaweedfs.s3_properties()
    secret = props.pop("s3.secret-access-key")
    (no_floe_file / ".pyiceberg.yaml").write_text(textwrap.dedent(f"""\
        catalog:
          weed:
            uri: {seaweedfs.catalog_uri}
            warehouse: {seaweedfs.warehouse}
            oauth2-server-uri: {seaweedfs.token_url}
        """) + "".join(f"    {k}: '{v}'\n" for k, v in props.items()))
    monkeypatch.setenv("PYICEBERG_CATALOG__WEED__CREDENTIAL",
                       f"{seaweedfs.access_key}:{seaweedfs.secret_key}")
    monkeypatch.setenv("PYICEBERG_CATALOG__WEED__S3__SECRET_ACCESS_KEY", secret)
    config = load_catalogs()["weed"]
    assert config.type == "rest" and config.problem is None, config.problem
    same_tables_both_ways(capsys, tmp_path, "weed", unique_name("db"))
