"""floe.catalog.config: catalogs from a TOML file, and CLI table arguments resolved through it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from floe.catalog.base import TableIdentifier
from floe.catalog.config import (
    CatalogConfig,
    is_secret_option,
    load_catalog,
    load_catalogs,
    parse_catalogs,
    parse_table_arg,
    redact,
    resolve_catalog_table,
    resolve_table_arg,
)
from floe.catalog.sql import SqlCatalog
from floe.errors import CatalogUnavailable, NotFound, ValidationError
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


GOOD = """
[catalogs.good]
type = "sql"
uri = "sqlite:///{db}"
warehouse = "{wh}"
"""


@pytest.mark.parametrize("body, problem", [
    ('[catalogs.x]\ntype = "hive"\n', "type must be one of"),
    ('[catalogs.x]\ntype = "rest-ish"\nuri = "http://h"\n', "type must be one of"),
    ('[catalogs.x]\ntype = "sql"\n', "missing option"),
    ('[catalogs.x]\ntype = "sql"\nuri = "sqlite://"\nurl = "typo"\n', "unknown option 'url'"),
    ('[catalogs.x]\ntype = "filesystem"\nwarehouse = 3\n', "must be a string"),
    ('[catalogs.x]\ntype = "filesystem"\nwarehouse = "/w"\n"s3.endpoint" = 9\n',
     "'s3.endpoint' must be a string"),
    ('[catalogs.x]\ntype = "sql"\nuri = "${FLOE_TEST_UNSET_VAR}"\n', "FLOE_TEST_UNSET_VAR"),
    ('[catalogs.x]\ntype = "sql"\nuri = "sqlite://"\ninit_catalog_tables = "maybe"\n',
     "true or false"),
    ('[catalogs."a b"]\ntype = "filesystem"\nwarehouse = "/w"\n', "names are letters"),
])
def test_a_broken_entry_makes_only_its_catalog_unusable(tmp_path: Path, body: str, problem: str):
    path = write_config(tmp_path, GOOD.format(db=tmp_path / "c.db", wh=tmp_path / "wh") + body)
    configs = load_catalogs(path)  # the file as a whole is usable
    name = "a b" if '"a b"' in body else "x"
    assert configs[name].problem is not None and problem in configs[name].problem
    with pytest.raises(ValidationError, match=problem) as info:
        load_catalog(name, configs)
    assert str(path) in str(info.value) and len(str(info.value).splitlines()) == 1
    with load_catalog("good", configs) as good:  # the other catalog works
        good.create_namespace("db")
        good.create_table("db.t", SCHEMA)
        assert [t.name for t in good.list_tables("db")] == ["t"]


@pytest.mark.parametrize("body, problem", [
    ('[catalog.x]\ntype = "filesystem"\n', "unknown top-level keys"),
    ('[catalogs.x\n', "not a valid TOML file"),
    ('catalogs = 3\n', "must be a table of catalogs"),
])
def test_a_file_that_does_not_parse_is_an_error_for_all(tmp_path: Path, body: str,
                                                         problem: str):
    """Which names a broken file defines is unknown: none of its catalogs, and no catalog
    of another place under a name it may define, is used."""
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


# -- catalogs that cannot be opened, and secrets ---------------------------------------------


def test_a_sql_database_that_cannot_be_opened_is_one_line(tmp_path: Path):
    path = write_config(tmp_path, f"""
[catalogs.bad]
type = "sql"
uri = "sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'c.db'}"
""" + GOOD.format(db=tmp_path / "c.db", wh=tmp_path / "wh"))
    configs = load_catalogs(path)
    with pytest.raises(CatalogUnavailable) as info:
        load_catalog("bad", configs)
    message = str(info.value)
    assert message.splitlines() == [message]
    assert message.startswith(f"catalog 'bad' (sql, from {path}) is unavailable: ")
    assert "unable to open database file" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no traceback
    load_catalog("good", configs).close()


def test_refused_sql_credentials_are_one_line_without_the_password(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch):
    secret = "pg-SECRET-7d1e0a"
    monkeypatch.setenv("FLOE_TEST_PG_PASSWORD", secret)
    url = make_url(postgres_url).set(username="floe_no_such_role", password="PW")
    uri = url.render_as_string(hide_password=False).replace(":PW@", ":${FLOE_TEST_PG_PASSWORD}@")
    path = write_config(tmp_path, f'[catalogs.pg]\ntype = "sql"\nuri = "{uri}"\n')
    configs = load_catalogs(path)
    assert secret in configs["pg"].options["uri"]
    assert secret not in repr(configs) and "***" in repr(configs["pg"])
    with pytest.raises(CatalogUnavailable) as info:
        load_catalog("pg", configs)
    message = str(info.value)
    assert message.splitlines() == [message] and "catalog 'pg'" in message
    assert 'role "floe_no_such_role" does not exist' in message
    assert secret not in message


def test_redact():
    config = CatalogConfig("r", "sql", {
        "uri": "postgresql+psycopg://u:p%40ss-w0rd@h/db", "s3.secret-access-key": "AKs3cr3t",
        "s3.access-key-id": "AKID", "credential": "client:cl1ent-s3cret",
        "header.x-api-key": "k3y-v4lue", "gcs.oauth2.token-expires-at": "1700000000000"})
    shown = repr(config)
    for secret in ("p%40ss-w0rd", "p@ss-w0rd", "AKs3cr3t", "cl1ent-s3cret", "k3y-v4lue"):
        assert secret not in shown
        assert secret not in redact(f"it failed near {secret}!")
    assert "AKID" in shown and "1700000000000" in shown  # not secrets
    assert redact("see mysql://someone:hunter2@db/x") == "see mysql://someone:***@db/x"
    assert is_secret_option("adls.sas-token") and is_secret_option("token")
    assert not is_secret_option("oauth2-server-uri") and not is_secret_option("s3.endpoint")


# -- PyIceberg's configuration ---------------------------------------------------------------


def write_yaml(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / ".pyiceberg.yaml"
    path.write_text(body)
    return path


def pyiceberg_view() -> dict[str, dict[str, object]]:
    """Every catalog as PyIceberg 0.12 itself reads the configuration right now."""
    from pyiceberg.utils.config import Config

    config = Config()
    return {name: dict(config.get_catalog_config(name) or {})
            for name in config.get_known_catalogs()}


def test_pyiceberg_yaml_and_variables_read_as_pyiceberg_reads_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "pyiceberg-home"
    yaml = write_yaml(home, f"""
catalog:
  Prod:
    uri: sqlite:///{tmp_path / 'prod.db'}
    Warehouse: {tmp_path / 'wh'}
    s3.endpoint: http://127.0.0.1:9
    init_catalog_tables: "true"
    echo: "false"
  typed:
    type: SQL
    uri: postgresql+psycopg://someone@127.0.0.1:1/db
  web:
    uri: https://catalog.example/api/catalog
    credential: client:web-SECRET-2
    warehouse: lakehouse
    header.X-Client: floe
    snapshot-loading-mode: all
  lake:
    type: glue
  thrifty:
    uri: thrift://metastore:9083
  odd:
    uri: mysql://h/db
  notype: {{}}
""".replace("  notype: {}\n", "  notype:\n    warehouse: /w\n"))
    monkeypatch.setenv("PYICEBERG_HOME", str(home))
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__S3__SECRET_ACCESS_KEY", "yaml-SECRET-1")
    monkeypatch.setenv("PYICEBERG_CATALOG__PROD__S3__ENDPOINT", "http://127.0.0.1:7")
    monkeypatch.setenv("PYICEBERG_CATALOG__ENV_ONLY__URI", f"sqlite:///{tmp_path / 'env.db'}")
    monkeypatch.setenv("PYICEBERG_CATALOG__ENV_ONLY__WAREHOUSE", str(tmp_path / "envwh"))

    configs = load_catalogs()
    theirs = pyiceberg_view()
    assert sorted(configs) == sorted(theirs) == [
        "env-only", "lake", "notype", "odd", "prod", "thrifty", "typed", "web"]
    for name, kind in (("prod", "sql"), ("typed", "sql"), ("env-only", "sql"), ("web", "rest")):
        assert configs[name].problem is None, configs[name].problem
        assert configs[name].type == kind  # given, or inferred from the uri as PyIceberg does
        ignored = {"type", "echo", "snapshot-loading-mode"}  # nothing floe would do otherwise
        assert configs[name].options == {k: v for k, v in theirs[name].items()
                                         if k not in ignored}
    assert configs["web"].options["header.x-client"] == "floe"  # PyIceberg lower-cases keys
    assert configs["prod"].options["s3.endpoint"] == "http://127.0.0.1:7"  # the variable wins
    assert configs["prod"].options["s3.secret-access-key"] == "yaml-SECRET-1"
    assert configs["prod"].source == (
        f"{yaml} (and PYICEBERG_CATALOG__PROD__* variables)")
    assert configs["env-only"].source == "PYICEBERG_CATALOG__ENV_ONLY__* variables"
    with load_catalog("env-only") as env_only:
        env_only.create_namespace("db")
        assert env_only.list_namespaces() == [("db",)]

    problems = {name: configs[name].problem or "" for name in
                ("lake", "thrifty", "odd", "notype")}
    assert "floe does not support glue catalogs" in problems["lake"]
    assert "floe does not support hive catalogs" in problems["thrifty"]
    assert "cannot infer the catalog type from its uri 'mysql://h/db'" in problems["odd"]
    assert "no type, and no uri" in problems["notype"]
    for name, problem in problems.items():
        assert problem.startswith(f"{yaml}: catalog {name!r}: ")
        with pytest.raises(ValidationError, match="catalog"):
            load_catalog(name)
    assert "yaml-SECRET-1" not in repr(configs) and "web-SECRET-2" not in repr(configs)


def test_pyiceberg_files_are_found_where_pyiceberg_looks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """$PYICEBERG_HOME, then the home directory, then the current directory; the first one
    that configures something."""
    body = "catalog:\n  {name}:\n    uri: sqlite:///{db}\n"
    cwd = tmp_path / "cwd"
    write_yaml(cwd, body.format(name="from_cwd", db=tmp_path / "a.db"))
    monkeypatch.chdir(cwd)
    assert sorted(load_catalogs()) == sorted(pyiceberg_view()) == ["from_cwd"]
    write_yaml(tmp_path / "home", body.format(name="from_home", db=tmp_path / "b.db"))
    assert sorted(load_catalogs()) == sorted(pyiceberg_view()) == ["from_home"]
    write_yaml(tmp_path / "ph", "default-catalog: x\n")  # the first file found is the one
    monkeypatch.setenv("PYICEBERG_HOME", str(tmp_path / "ph"))
    assert sorted(load_catalogs()) == sorted(pyiceberg_view()) == []
    write_yaml(tmp_path / "ph", body.format(name="from_ph", db=tmp_path / "c.db"))
    assert sorted(load_catalogs()) == sorted(pyiceberg_view()) == ["from_ph"]


def test_floe_settings_win_over_pyiceberg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    write_yaml(tmp_path / "home", f"""
catalog:
  shared:
    uri: sqlite:///{tmp_path / 'theirs.db'}
  local:
    uri: sqlite:///{tmp_path / 'theirs-local.db'}
  only_theirs:
    uri: sqlite:///{tmp_path / 'only.db'}
""")
    path = write_config(tmp_path, f'[catalogs.shared]\ntype = "filesystem"\n'
                                  f'warehouse = "{tmp_path / "ours"}"\n')
    monkeypatch.setenv("FLOE_WAREHOUSE", str(tmp_path / "local-wh"))
    configs = load_catalogs(path)
    assert configs["shared"].type == "filesystem" and configs["shared"].source == str(path)
    assert configs["local"].options == {"warehouse": str(tmp_path / "local-wh")}
    assert configs["only_theirs"].type == "sql"
    assert load_catalogs(path, pyiceberg=False).keys() == {"shared", "local"}


def test_a_pyiceberg_file_that_does_not_parse_leaves_floe_catalogs_usable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yaml = write_yaml(tmp_path / "home", "catalog:\n  x: {uri: flow-style}\n")
    path = write_config(tmp_path, GOOD.format(db=tmp_path / "c.db", wh=tmp_path / "wh"))
    configs = load_catalogs(path)
    assert list(configs) == ["good"]
    assert len(configs.problems) == 1 and configs.problems[0].startswith(
        f"{yaml}: not a YAML file PyIceberg reads")
    load_catalog("good", configs).close()
    with pytest.raises(NotFound, match=r"no catalog named 'x' .*not a YAML file"):
        load_catalog("x", configs)


def test_log_records_are_redacted_by_the_filter():
    """explorer.settings puts RedactSecrets on its log handler: messages and tracebacks."""
    import io
    import logging

    from floe.catalog.config import RedactSecrets

    CatalogConfig("logged", "sql", {"uri": "sqlite://", "token": "tok-L0GGED-s3cret"})
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactSecrets())
    logger = logging.getLogger("floe.test.redact")
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError("failed with tok-L0GGED-s3cret inside")
        except RuntimeError:
            logger.error("token %s, uri %s", "tok-L0GGED-s3cret", "pg://u:pw-L0GGED@h/db",
                         exc_info=True)
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "tok-L0GGED-s3cret" not in text and "pw-L0GGED" not in text
    assert "token ***, uri pg://u:***@h/db" in text and "RuntimeError: failed with ***" in text
