"""The object-storage harness (tests/object_store.py) and the facts its docstring records about
SeaweedFS, its Iceberg REST catalog, moto, Azurite, fake-gcs-server, DuckDB and PyIceberg: each
test here fails when one of them stops being true."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from tests.object_store import (
    GRPC_OFFSET,
    LOOPBACK,
    Azurite,
    FakeGcs,
    MotoS3,
    S3Server,
    SeaweedFS,
    duckdb_attach_rest,
    duckdb_connect,
    duckdb_extension_path,
    http_json,
    obstore_azure,
    obstore_gcs,
    obstore_s3,
    pyarrow_azure,
    pyarrow_s3,
    pyiceberg_rest_catalog,
    pyiceberg_sql_catalog,
    unique_name,
)

pytestmark = pytest.mark.objectstore

# DuckDB keys the file_path bounds of its position deletes by this id; the spec's is 2147483546
DUCKDB_DELETE_FILE_PATH_ID = 2147483646


@pytest.fixture(params=["seaweedfs", "moto_s3"])
def s3_server(request: pytest.FixtureRequest) -> S3Server:
    """Each S3 server in turn."""
    server: S3Server = request.getfixturevalue(request.param)
    return server


def _listening_sockets(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket the process listens on, from /proc."""
    inodes: set[str] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink()
        except OSError:
            continue
        if str(target).startswith("socket:["):
            inodes.add(str(target)[8:-1])
    found: set[tuple[str, int]] = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            address, port = local.split(":")
            if table == "tcp":
                ip = socket.inet_ntop(socket.AF_INET, bytes.fromhex(address)[::-1])
            else:
                ip = "v6:" + address
            found.add((ip, int(port, 16)))
    return found


def _rows(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r[key])


# -- the servers -----------------------------------------------------------------------------

def test_seaweedfs_listens_only_on_loopback_on_the_ports_it_was_given(
        seaweedfs: SeaweedFS) -> None:
    assert seaweedfs.process is not None
    http = set(seaweedfs.ports.values())
    grpc = {port + GRPC_OFFSET for name, port in seaweedfs.ports.items() if name != "iceberg"}
    assert _listening_sockets(seaweedfs.process.pid) == {(LOOPBACK, p) for p in http | grpc}


def test_moto_listens_only_on_loopback(moto_s3: MotoS3) -> None:
    assert moto_s3.process is not None
    assert _listening_sockets(moto_s3.process.pid) == {(LOOPBACK, moto_s3.port)}


def test_azurite_listens_only_on_loopback(azurite: Azurite) -> None:
    assert azurite.process is not None
    assert _listening_sockets(azurite.process.pid) == {(LOOPBACK, azurite.port)}


# -- SeaweedFS's REST catalog: configuration and auth ----------------------------------------

def test_rest_config_answers_without_auth_and_names_the_table_bucket_as_prefix(
        seaweedfs: SeaweedFS) -> None:
    config = f"{seaweedfs.catalog_uri}/v1/config"
    assert http_json("GET", config) == (200, {"defaults": {}, "overrides": {}})
    assert http_json("GET", f"{config}?warehouse={seaweedfs.warehouse}") == (
        200, {"defaults": {"warehouse": seaweedfs.warehouse},
              "overrides": {"prefix": seaweedfs.table_bucket}})


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 403),
    ({"Authorization": "Bearer None"}, 401),  # what PyIceberg sends with no credential
])
def test_rest_catalog_refuses_a_request_without_a_valid_token(
        seaweedfs: SeaweedFS, headers: dict[str, str], status: int) -> None:
    got, _ = http_json("GET", f"{seaweedfs.catalog_uri}/v1/{seaweedfs.table_bucket}/namespaces",
                       headers=headers)
    assert got == status


def test_rest_catalog_token_from_the_s3_pair_lists_namespaces(seaweedfs: SeaweedFS) -> None:
    status, body = seaweedfs.catalog_request("GET", f"/v1/{seaweedfs.table_bucket}/namespaces")
    assert status == 200 and "namespaces" in body


def test_rest_catalog_refuses_a_wrong_client_secret(seaweedfs: SeaweedFS) -> None:
    from pyiceberg.exceptions import OAuthError

    with pytest.raises(OAuthError, match="invalid_client"):
        pyiceberg_rest_catalog(seaweedfs, credential=f"{seaweedfs.access_key}:wrong")


def test_pyiceberg_without_credential_is_refused(seaweedfs: SeaweedFS) -> None:
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import UnauthorizedError

    catalog = RestCatalog("nocred", **{"uri": seaweedfs.catalog_uri,
                                       "warehouse": seaweedfs.warehouse,
                                       "oauth2-server-uri": seaweedfs.token_url})
    with pytest.raises(UnauthorizedError, match="Bearer token is invalid"):
        catalog.list_namespaces()


def test_sigv4_signed_reads_pass_and_signed_writes_are_refused(seaweedfs: SeaweedFS) -> None:
    """SeaweedFS checks SigV4 on the REST catalog, but PyIceberg's signature of a request with
    a body does not match (PyIceberg signs with service 'execute-api' and no payload hash
    header): use OAuth2 client credentials."""
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import ForbiddenError

    catalog = RestCatalog("sigv4", **{
        "uri": seaweedfs.catalog_uri, "warehouse": seaweedfs.warehouse,
        "rest.sigv4-enabled": "true", "rest.signing-region": seaweedfs.region,
        "rest.signing-name": "s3", "client.access-key-id": seaweedfs.access_key,
        "client.secret-access-key": seaweedfs.secret_key, "client.region": seaweedfs.region,
    })
    namespace = unique_name("sigv4")
    pyiceberg_rest_catalog(seaweedfs).create_namespace(namespace)
    assert (namespace,) in catalog.list_namespaces()
    with pytest.raises(ForbiddenError, match="signature we calculated does not match"):
        catalog.create_namespace(unique_name("sigv4"))


def test_load_table_config_has_the_endpoint_and_no_credentials(seaweedfs: SeaweedFS) -> None:
    catalog = pyiceberg_rest_catalog(seaweedfs)
    namespace = unique_name("cfg")
    catalog.create_namespace(namespace)
    catalog.create_table((namespace, "t"), pa.schema([("id", pa.int64())]))
    path = f"/v1/{seaweedfs.table_bucket}/namespaces/{namespace}/tables/t"

    status, body = seaweedfs.catalog_request("GET", path)
    assert status == 200
    assert body["config"] == {"s3.endpoint": seaweedfs.endpoint, "s3.path-style-access": "true",
                              "s3.region": seaweedfs.region}
    assert body["metadata-location"].startswith(f"{seaweedfs.warehouse}/{namespace}/t/metadata/")
    assert "storage-credentials" not in body

    # asking for vended credentials gets nothing, not even the endpoint: no role is configured
    status, body = seaweedfs.catalog_request(
        "GET", path, headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert status == 200 and body["config"] == {}
    assert seaweedfs.catalog_request("GET", f"{path}/credentials")[0] == 404


def test_pyiceberg_asks_for_vended_credentials_and_so_gets_no_endpoint(
        seaweedfs: SeaweedFS) -> None:
    """PyIceberg sends ``X-Iceberg-Access-Delegation: vended-credentials`` unless told
    otherwise; SeaweedFS then answers an empty config, so PyIceberg needs ``s3.endpoint``
    itself. With the header emptied, the S3 keys alone are enough."""
    from pyiceberg.catalog.rest import RestCatalog

    namespace = unique_name("keys")
    writer = pyiceberg_rest_catalog(seaweedfs)
    writer.create_namespace(namespace)
    writer.create_table((namespace, "t"), pa.schema([("id", pa.int64())])).append(
        pa.table({"id": pa.array([1, 2], pa.int64())}))
    keys_only = {
        "uri": seaweedfs.catalog_uri, "warehouse": seaweedfs.warehouse,
        "credential": f"{seaweedfs.access_key}:{seaweedfs.secret_key}",
        "oauth2-server-uri": seaweedfs.token_url,
        "s3.access-key-id": seaweedfs.access_key,
        "s3.secret-access-key": seaweedfs.secret_key,
    }

    table = RestCatalog("default", **keys_only).load_table((namespace, "t"))
    assert table.config == {} and "s3.endpoint" not in table.io.properties

    no_delegation = RestCatalog("no-delegation", **keys_only,
                                **{"header.X-Iceberg-Access-Delegation": ""})
    table = no_delegation.load_table((namespace, "t"))
    assert table.io.properties["s3.endpoint"] == seaweedfs.endpoint
    assert table.scan().to_arrow().num_rows == 2


def test_nested_namespaces_are_listed_whole_and_paged(seaweedfs: SeaweedFS) -> None:
    """A nested namespace needs no parent entry, and the top-level listing shows it whole
    (the spec would list only its first level). Pages carry ``next-page-token`` (the last
    name returned) while they are full."""
    catalog = pyiceberg_rest_catalog(seaweedfs)
    parent = unique_name("outer")
    for child in ("a", "b", "c"):
        catalog.create_namespace((parent, child))
    catalog.create_table((parent, "a", "t"), pa.schema([("id", pa.int64())]))

    top = catalog.list_namespaces()
    assert (parent, "a") in top and (parent,) not in top
    assert catalog.list_namespaces(parent) == [(parent, "a"), (parent, "b"), (parent, "c")]
    assert catalog.list_tables((parent, "a")) == [(parent, "a", "t")]

    pages, token = [], None
    while True:
        query = f"parent={parent}&pageSize=2" + (f"&pageToken={token}" if token else "")
        status, body = seaweedfs.catalog_request(
            "GET", f"/v1/{seaweedfs.table_bucket}/namespaces?{query}")
        assert status == 200
        pages.append(body["namespaces"])
        token = body.get("next-page-token")
        if not token:
            break
    assert pages[0] == [[parent, "a"], [parent, "b"]]
    assert [ns for page in pages for ns in page] == [[parent, "a"], [parent, "b"], [parent, "c"]]


def test_a_commit_whose_requirement_fails_is_a_409(seaweedfs: SeaweedFS) -> None:
    catalog = pyiceberg_rest_catalog(seaweedfs)
    namespace = unique_name("commit")
    catalog.create_namespace(namespace)
    catalog.create_table((namespace, "t"), pa.schema([("id", pa.int64())]))
    path = f"/v1/{seaweedfs.table_bucket}/namespaces/{namespace}/tables/t"

    status, body = seaweedfs.catalog_request("POST", path, body={
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    })
    assert status == 409 and body["error"]["type"] == "CommitFailedException"
    assert "k" not in catalog.load_table((namespace, "t")).properties
    status, body = seaweedfs.catalog_request("GET", path.removesuffix("/t") + "/missing")
    assert status == 404 and body["error"]["type"] == "NoSuchTableException"


# -- PyIceberg through the REST catalog --------------------------------------------------------

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string()),
                    pa.field("amount", pa.float64())])


def _batch(ids: list[int], cats: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array(cats, pa.string()),
                     "amount": pa.array([i * 1.5 for i in ids], pa.float64())})


def _partitioned_table(catalog: Any, namespace: str, name: str) -> Any:
    from pyiceberg.partitioning import PartitionField
    from pyiceberg.transforms import IdentityTransform

    catalog.create_namespace_if_not_exists(namespace)
    table = catalog.create_table((namespace, name), SCHEMA)
    with table.update_spec() as spec:
        spec.add_field("cat", IdentityTransform(), "cat")
    assert table.spec().fields == (PartitionField(2, 1000, IdentityTransform(), "cat"),)
    return table


def test_pyiceberg_writes_deletes_evolves_and_reads_a_partitioned_rest_table(
        seaweedfs: SeaweedFS) -> None:
    catalog = pyiceberg_rest_catalog(seaweedfs)
    namespace = unique_name("py")
    table = _partitioned_table(catalog, namespace, "events")
    table.append(_batch([1, 2, 3, 4], ["a", "b", "a", "c"]))
    table.append(_batch([5, 6], ["a", "b"]))
    after_appends = table.current_snapshot().snapshot_id

    # copy-on-write: id 4 is alone in its file, which is dropped (a "delete" snapshot); id 1
    # shares its file with id 3, which is rewritten (an "overwrite" snapshot)
    table.delete("id = 1 or id = 4")
    operations = [s.summary.operation.value for s in table.snapshots()]
    assert operations == ["append", "append", "delete", "overwrite"]

    from pyiceberg.types import StringType

    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("amount", "value")
    table.append(pa.table({"id": pa.array([7], pa.int64()), "cat": ["c"],
                           "value": pa.array([10.5]), "note": ["late"]}))

    reread = catalog.load_table((namespace, "events"))
    assert _rows(reread.scan().to_arrow()) == [
        {"id": 2, "cat": "b", "value": 3.0, "note": None},
        {"id": 3, "cat": "a", "value": 4.5, "note": None},
        {"id": 5, "cat": "a", "value": 7.5, "note": None},
        {"id": 6, "cat": "b", "value": 9.0, "note": None},
        {"id": 7, "cat": "c", "value": 10.5, "note": "late"},
    ]
    assert sorted(reread.scan(snapshot_id=after_appends).to_arrow()["id"].to_pylist()) == [
        1, 2, 3, 4, 5, 6]
    # the files are where the REST catalog put the table: in the table bucket, by partition
    files = pyarrow_s3(seaweedfs).get_file_info(
        pafs.FileSelector(f"{seaweedfs.table_bucket}/{namespace}/events/data", recursive=True))
    assert {Path(f.path).parent.name for f in files if f.is_file} == {"cat=a", "cat=b", "cat=c"}


def test_pyiceberg_merge_on_read_delete_falls_back_to_copy_on_write(seaweedfs: SeaweedFS) -> None:
    catalog = pyiceberg_rest_catalog(seaweedfs)
    table = _partitioned_table(catalog, unique_name("mor"), "t")
    with table.transaction() as tx:
        tx.set_properties({"write.delete.mode": "merge-on-read"})
    table.append(_batch([1, 2, 3], ["a", "a", "b"]))
    with pytest.warns(UserWarning, match="Merge on read is not yet supported"):
        table.delete("id = 1")
    assert table.inspect.delete_files().num_rows == 0
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [2, 3]


# -- DuckDB on the same REST catalog ------------------------------------------------------------

def test_duckdb_loads_its_extensions_from_the_wheels() -> None:
    con = duckdb_connect()
    loaded = dict(con.execute(
        "SELECT extension_name, install_path FROM duckdb_extensions() WHERE loaded").fetchall())
    for name in ("httpfs", "avro", "iceberg"):
        assert name in loaded
        assert duckdb_extension_path(name).is_file()
    assert con.execute("SELECT current_setting('autoinstall_known_extensions'), "
                       "current_setting('autoload_known_extensions')").fetchone() == (False, False)


def test_duckdb_and_pyiceberg_change_the_same_rest_table(seaweedfs: SeaweedFS) -> None:
    catalog = pyiceberg_rest_catalog(seaweedfs)
    namespace = unique_name("dk")
    table = _partitioned_table(catalog, namespace, "t")
    table.append(_batch([1, 2, 3, 4], ["a", "b", "a", "c"]))
    with table.update_schema() as update:
        update.rename_column("amount", "value")

    con = duckdb_connect(seaweedfs)
    duckdb_attach_rest(con, seaweedfs)
    name = f"lake.{namespace}.t"
    assert con.execute(f"SELECT id, cat, value FROM {name} ORDER BY id").fetchall() == [
        (1, "a", 1.5), (2, "b", 3.0), (3, "a", 4.5), (4, "c", 6.0)]

    con.execute(f"INSERT INTO {name} VALUES (10, 'a', 0.5), (11, 'd', 1.0)")
    con.execute(f"DELETE FROM {name} WHERE id = 1")
    duck = con.execute(f"SELECT id, cat, value FROM {name} ORDER BY id").fetchall()
    assert [r[0] for r in duck] == [2, 3, 4, 10, 11]

    reread = catalog.load_table((namespace, "t"))
    assert [(r["id"], r["cat"], r["value"]) for r in _rows(reread.scan().to_arrow())] == duck
    assert [s.summary.operation.value for s in reread.snapshots()] == [
        "append", "append", "delete"]

    from pyiceberg.manifest import DataFileContent

    entries = [e.data_file for m in reread.current_snapshot().manifests(reread.io)
               for e in m.fetch_manifest_entry(reread.io)]
    deletes = [f for f in entries if f.content == DataFileContent.POSITION_DELETES]
    assert len(deletes) == 1
    (delete,) = deletes
    assert delete.file_path.startswith(f"{seaweedfs.warehouse}/{namespace}/t/data/cat=a/")
    assert set(delete.lower_bounds) == {DUCKDB_DELETE_FILE_PATH_ID}
    target = delete.lower_bounds[DUCKDB_DELETE_FILE_PATH_ID].decode()
    assert target == delete.upper_bounds[DUCKDB_DELETE_FILE_PATH_ID].decode()
    assert target in {f.file_path for f in entries if f.content == DataFileContent.DATA}
    duck_data = [f for f in entries if f.content == DataFileContent.DATA and
                 f.file_path.rsplit("/", 1)[1].count("-") == 4]  # DuckDB names files <uuid>
    assert duck_data and all(f.column_sizes is None and f.value_counts is None
                             for f in duck_data + deletes)


def test_duckdb_without_authorization_is_refused_a_table(seaweedfs: SeaweedFS) -> None:
    import duckdb

    namespace = unique_name("noauth")
    catalog = pyiceberg_rest_catalog(seaweedfs)
    catalog.create_namespace(namespace)
    catalog.create_table((namespace, "t"), pa.schema([("id", pa.int64())]))
    con = duckdb_connect(seaweedfs)
    con.execute(f"ATTACH '{seaweedfs.warehouse}' AS anon (TYPE iceberg, "
                f"ENDPOINT '{seaweedfs.catalog_uri}', AUTHORIZATION_TYPE 'none')")
    with pytest.raises(duckdb.HTTPException, match="403"):
        con.execute(f"SELECT count(*) FROM anon.{namespace}.t").fetchall()


def test_pyiceberg_reads_a_table_duckdb_created(seaweedfs: SeaweedFS) -> None:
    catalog = pyiceberg_rest_catalog(seaweedfs)
    namespace = unique_name("dkc")
    catalog.create_namespace(namespace)
    con = duckdb_connect(seaweedfs)
    duckdb_attach_rest(con, seaweedfs)
    con.execute(f"CREATE TABLE lake.{namespace}.made (id BIGINT, s VARCHAR)")
    con.execute(f"INSERT INTO lake.{namespace}.made VALUES (1, 'x'), (2, 'y')")
    assert _rows(catalog.load_table((namespace, "made")).scan().to_arrow()) == [
        {"id": 1, "s": "x"}, {"id": 2, "s": "y"}]


# -- PyIceberg's SQL catalog over the plain bucket ---------------------------------------------

def test_pyiceberg_sql_catalog_keeps_its_warehouse_in_the_plain_bucket(
        seaweedfs: SeaweedFS, tmp_path: Path) -> None:
    prefix = unique_name("wh")
    catalog = pyiceberg_sql_catalog(seaweedfs, tmp_path / "catalog.db",
                                    f"s3://{seaweedfs.bucket}/{prefix}")
    catalog.create_namespace("shop")
    table = catalog.create_table(("shop", "orders"), SCHEMA)
    table.append(_batch([1, 2, 3], ["a", "b", "a"]))
    table.delete("id = 2")

    assert table.metadata_location.startswith(f"s3://{seaweedfs.bucket}/{prefix}/shop/orders/")
    reread = pyiceberg_sql_catalog(seaweedfs, tmp_path / "catalog.db",
                                   f"s3://{seaweedfs.bucket}/{prefix}")
    assert sorted(reread.load_table(("shop", "orders")).scan().to_arrow()["id"].to_pylist()) == [
        1, 3]
    con = duckdb_connect(seaweedfs)
    assert con.execute(f"SELECT count(*) FROM iceberg_scan('{table.metadata_location}')"
                       ).fetchone() == (2,)


def test_the_table_bucket_refuses_plain_objects(seaweedfs: SeaweedFS) -> None:
    import obstore
    from obstore.exceptions import PermissionDeniedError

    with pytest.raises(PermissionDeniedError, match="AccessDenied"):
        obstore.put(obstore_s3(seaweedfs, seaweedfs.table_bucket), "loose.txt", b"x")


# -- file clients on both servers ---------------------------------------------------------------

def test_obstore_writes_lists_reads_ranges_and_deletes(s3_server: S3Server) -> None:
    import obstore

    store = obstore_s3(s3_server)
    prefix = unique_name("ob")
    obstore.put(store, f"{prefix}/a.bin", b"0123456789")
    obstore.put(store, f"{prefix}/b/c.bin", b"xyz")
    assert sorted(m["path"] for m in obstore.list(store, prefix=prefix).collect()) == [
        f"{prefix}/a.bin", f"{prefix}/b/c.bin"]
    assert bytes(obstore.get_range(store, f"{prefix}/a.bin", start=3, end=7)) == b"3456"
    assert obstore.head(store, f"{prefix}/a.bin")["size"] == 10
    obstore.delete(store, [f"{prefix}/a.bin", f"{prefix}/b/c.bin"])
    assert obstore.list(store, prefix=prefix).collect() == []


def test_pyarrow_writes_lists_reads_ranges_and_deletes(s3_server: S3Server) -> None:
    fs = pyarrow_s3(s3_server)
    root = f"{s3_server.bucket}/{unique_name('pa')}"
    with fs.open_output_stream(f"{root}/a.bin") as out:
        out.write(b"0123456789")
    with fs.open_output_stream(f"{root}/b/c.bin") as out:
        out.write(b"xyz")
    listed = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    assert sorted(f.path for f in listed if f.is_file) == [f"{root}/a.bin", f"{root}/b/c.bin"]
    with fs.open_input_file(f"{root}/a.bin") as f:
        assert f.size() == 10 and f.read_at(4, 3) == b"3456"
    fs.delete_dir(root)
    assert fs.get_file_info(f"{root}/a.bin").type == pafs.FileType.NotFound


def test_duckdb_reads_and_writes_parquet_on_the_server(s3_server: S3Server) -> None:
    con = duckdb_connect(s3_server)
    path = f"s3://{s3_server.bucket}/{unique_name('dp')}/t.parquet"
    con.execute(f"COPY (SELECT range AS id FROM range(5)) TO '{path}' (FORMAT parquet)")
    assert con.execute(f"SELECT sum(id) FROM read_parquet('{path}')").fetchone() == (10,)


def test_conditional_create_refuses_an_existing_key(s3_server: S3Server) -> None:
    """``If-None-Match: *``: the commit primitive of a file-system catalog in a bucket."""
    import obstore
    from obstore.exceptions import AlreadyExistsError

    store = obstore_s3(s3_server)
    key = f"{unique_name('inm')}/v1.metadata.json"
    obstore.put(store, key, b"first", mode="create")
    with pytest.raises(AlreadyExistsError, match="412 Precondition Failed"):
        obstore.put(store, key, b"second", mode="create")
    assert bytes(obstore.get(store, key).bytes()) == b"first"


def test_conditional_update_refuses_a_stale_etag(s3_server: S3Server) -> None:
    import obstore
    from obstore.exceptions import PreconditionError

    store = obstore_s3(s3_server)
    key = f"{unique_name('im')}/pointer"
    first = obstore.put(store, key, b"one")
    second = obstore.put(store, key, b"two", mode={"e_tag": first["e_tag"]})
    with pytest.raises(PreconditionError):
        obstore.put(store, key, b"three", mode={"e_tag": first["e_tag"]})
    assert second["e_tag"] != first["e_tag"]
    assert bytes(obstore.get(store, key).bytes()) == b"two"


@pytest.mark.parametrize(("key", "secret", "code"), [
    (None, "wrong-secret", "SignatureDoesNotMatch"),
    ("nobody", None, "InvalidAccessKeyId"),
])
def test_seaweedfs_refuses_wrong_credentials(seaweedfs: SeaweedFS, key: str | None,
                                             secret: str | None, code: str) -> None:
    import obstore
    from obstore.exceptions import PermissionDeniedError

    with pytest.raises(PermissionDeniedError, match=f"(?s)403 Forbidden.*<Code>{code}</Code>"):
        obstore.put(obstore_s3(seaweedfs, access_key=key, secret_key=secret), "refused.txt", b"x")
    with pytest.raises(OSError, match="AWS Error ACCESS_DENIED"):
        pyarrow_s3(seaweedfs, access_key=key, secret_key=secret).get_file_info(
            f"{seaweedfs.bucket}/anything")
    assert obstore.list(obstore_s3(seaweedfs), prefix="refused.txt").collect() == []


def test_moto_accepts_any_credentials(moto_s3: MotoS3) -> None:
    import obstore

    key = f"{unique_name('any')}.txt"
    obstore.put(obstore_s3(moto_s3, secret_key="not-the-secret"), key, b"x")
    assert bytes(obstore.get(obstore_s3(moto_s3), key).bytes()) == b"x"


# -- restarts and signals (these stop the session's servers; they come back on the same ports) --

def test_seaweedfs_restart_keeps_objects_tables_and_tokens(seaweedfs: SeaweedFS) -> None:
    import obstore

    key = f"{unique_name('keep')}.bin"
    obstore.put(obstore_s3(seaweedfs), key, b"kept")
    namespace = unique_name("keep")
    catalog = pyiceberg_rest_catalog(seaweedfs)
    catalog.create_namespace(namespace)
    catalog.create_table((namespace, "t"), SCHEMA).append(_batch([1, 2], ["a", "b"]))
    token = seaweedfs.catalog_token()
    ports = dict(seaweedfs.ports)

    seaweedfs.stop()
    assert seaweedfs.process is None
    with pytest.raises(OSError):
        socket.create_connection((LOOPBACK, seaweedfs.port), timeout=1).close()
    seaweedfs.start()

    assert seaweedfs.ports == ports
    assert bytes(obstore.get(obstore_s3(seaweedfs), key).bytes()) == b"kept"
    assert catalog.load_table((namespace, "t")).scan().to_arrow().num_rows == 2
    status, _ = seaweedfs.catalog_request("GET", f"/v1/{seaweedfs.table_bucket}/namespaces",
                                          token=token)
    assert status == 200


def test_seaweedfs_comes_back_after_sigkill(seaweedfs: SeaweedFS) -> None:
    import obstore

    key = f"{unique_name('crash')}.bin"
    obstore.put(obstore_s3(seaweedfs), key, b"acknowledged")
    seaweedfs.kill()
    seaweedfs.start()
    assert bytes(obstore.get(obstore_s3(seaweedfs), key).bytes()) == b"acknowledged"


def test_a_paused_seaweedfs_hangs_requests_until_resumed(seaweedfs: SeaweedFS) -> None:
    url = f"{seaweedfs.catalog_uri}/v1/config"
    seaweedfs.pause()
    try:
        with pytest.raises(OSError, match="timed out"):
            http_json("GET", url, timeout=0.5)
    finally:
        seaweedfs.resume()
    assert http_json("GET", url)[0] == 200


def test_moto_restart_starts_empty(moto_s3: MotoS3) -> None:
    import obstore

    key = f"{unique_name('gone')}.bin"
    obstore.put(obstore_s3(moto_s3), key, b"x")
    moto_s3.restart()
    assert obstore.list(obstore_s3(moto_s3), prefix=key).collect() == []
    obstore.put(obstore_s3(moto_s3), key, b"y")  # the bucket is there again


# -- Azurite ----------------------------------------------------------------------------------

def test_azurite_obstore_and_pyarrow_see_the_same_blobs(azurite: Azurite) -> None:
    import obstore

    store = obstore_azure(azurite)
    fs = pyarrow_azure(azurite)
    prefix = unique_name("az")
    obstore.put(store, f"{prefix}/a.bin", b"0123456789")
    with fs.open_output_stream(f"{azurite.container}/{prefix}/b/c.bin") as out:
        out.write(b"xyz")
    assert sorted(m["path"] for m in obstore.list(store, prefix=prefix).collect()) == [
        f"{prefix}/a.bin", f"{prefix}/b/c.bin"]
    listed = obstore.list_with_delimiter(store, prefix)
    assert listed["common_prefixes"] == [f"{prefix}/b"]
    assert [m["path"] for m in listed["objects"]] == [f"{prefix}/a.bin"]
    with fs.open_input_file(f"{azurite.container}/{prefix}/a.bin") as f:
        assert f.read_at(4, 3) == b"3456"
    assert bytes(obstore.get_range(store, f"{prefix}/b/c.bin", start=1, end=3)) == b"yz"
    obstore.delete(store, [f"{prefix}/a.bin", f"{prefix}/b/c.bin"])
    assert obstore.list(store, prefix=prefix).collect() == []


def test_azurite_conditional_create_refuses_an_existing_blob(azurite: Azurite) -> None:
    """``If-None-Match: *`` on Put Blob is 409 ``BlobAlreadyExists`` (S3 answers 412): a
    file-system catalog in a container can commit by a conditional create."""
    import obstore
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    store = obstore_azure(azurite)
    key = f"{unique_name('inm')}/v1.metadata.json"
    first = obstore.put(store, key, b"first", mode="create")
    with pytest.raises(AlreadyExistsError, match="(?s)409 Conflict.*BlobAlreadyExists"):
        obstore.put(store, key, b"second", mode="create")
    second = obstore.put(store, key, b"two", mode={"e_tag": first["e_tag"]})
    with pytest.raises(PreconditionError, match="412"):
        obstore.put(store, key, b"three", mode={"e_tag": first["e_tag"]})
    assert second["e_tag"] != first["e_tag"]
    assert bytes(obstore.get(store, key).bytes()) == b"two"


def test_azurite_batch_delete_names_a_missing_blob_and_deletes_the_others(
        azurite: Azurite) -> None:
    """object_store deletes Azure blobs by the Blob Batch API: a missing blob is a 404 in the
    batch's answer, raised as NotFound, and the other blobs of the batch are gone."""
    import obstore

    store = obstore_azure(azurite)
    prefix = unique_name("batch")
    for name in ("a", "c"):
        obstore.put(store, f"{prefix}/{name}", b"x")
    with pytest.raises(FileNotFoundError, match=f"{prefix}/b"):
        obstore.delete(store, [f"{prefix}/a", f"{prefix}/b", f"{prefix}/c"])
    assert obstore.list(store, prefix=prefix).collect() == []


def test_azurite_refuses_a_wrong_account_key(azurite: Azurite) -> None:
    import base64

    import obstore
    from obstore.exceptions import PermissionDeniedError

    wrong = base64.b64encode(b"not-the-key").decode()
    with pytest.raises(PermissionDeniedError,
                       match="(?s)403 Forbidden.*<Code>AuthorizationFailure</Code>"):
        obstore.put(obstore_azure(azurite, account_key=wrong), "refused.txt", b"x")
    with pytest.raises(OSError, match="403"):
        pyarrow_azure(azurite, account_key=wrong).get_file_info(f"{azurite.container}/x")
    assert obstore.list(obstore_azure(azurite), prefix="refused.txt").collect() == []


def test_azurite_restart_starts_empty(azurite: Azurite) -> None:
    import obstore

    key = f"{unique_name('gone')}.bin"
    obstore.put(obstore_azure(azurite), key, b"x")
    azurite.restart()
    assert obstore.list(obstore_azure(azurite), prefix=key).collect() == []
    obstore.put(obstore_azure(azurite), key, b"y")  # the container is there again


def test_azurite_account_sas_reads_writes_and_lists_but_not_batch_deletes(
        azurite: Azurite) -> None:
    import datetime

    import obstore
    from obstore.exceptions import PermissionDeniedError
    from obstore.store import AzureStore

    def store(permissions: str) -> AzureStore:
        return AzureStore(
            container_name=azurite.container, account_name=azurite.account,
            sas_key=azurite.account_sas(permissions), endpoint=azurite.account_endpoint,
            client_options={"allow_http": True},
            retry_config={"max_retries": 0, "retry_timeout": datetime.timedelta(seconds=5)})

    key = f"{unique_name('sas')}/a.bin"
    obstore.put(store("rwl"), key, b"sas")
    assert bytes(obstore.get(store("r"), key).bytes()) == b"sas"
    listed = obstore.list(store("l"), prefix=key.split("/")[0]).collect()
    assert [m["path"] for m in listed] == [key]
    with pytest.raises(PermissionDeniedError, match="AuthorizationPermissionMismatch"):
        obstore.put(store("rl"), key, b"no")
    with pytest.raises(Exception, match="500 Internal Server Error"):
        obstore.delete(store("rwdl"), key)
    obstore.delete(obstore_azure(azurite), key)  # the account key deletes it


# -- fake-gcs-server --------------------------------------------------------------------------

def test_fake_gcs_listens_only_on_loopback(fake_gcs: FakeGcs) -> None:
    assert fake_gcs.process is not None
    assert _listening_sockets(fake_gcs.process.pid) == {(LOOPBACK, fake_gcs.port)}


def test_fake_gcs_serves_obstore_reads_listings_and_deletes_of_uploaded_objects(
        fake_gcs: FakeGcs) -> None:
    import obstore

    store = obstore_gcs(fake_gcs)
    prefix = unique_name("gcs")
    fake_gcs.upload(f"{prefix}/a.bin", b"0123456789")
    fake_gcs.upload(f"{prefix}/b/c.bin", b"xyz")
    assert bytes(obstore.get(store, f"{prefix}/a.bin").bytes()) == b"0123456789"
    assert bytes(obstore.get_range(store, f"{prefix}/a.bin", start=3, length=4)) == b"3456"
    assert obstore.head(store, f"{prefix}/b/c.bin")["size"] == 3
    assert sorted(m["path"] for m in obstore.list(store, prefix=prefix).collect()) == [
        f"{prefix}/a.bin", f"{prefix}/b/c.bin"]
    listed = obstore.list_with_delimiter(store, prefix)
    assert listed["common_prefixes"] == [f"{prefix}/b"]
    assert [m["path"] for m in listed["objects"]] == [f"{prefix}/a.bin"]
    obstore.delete(store, [f"{prefix}/a.bin", f"{prefix}/b/c.bin"])
    assert obstore.list(store, prefix=prefix).collect() == []


def test_fake_gcs_refuses_every_obstore_write(fake_gcs: FakeGcs) -> None:
    """object_store writes through the XML API; fake-gcs-server writes only through the JSON
    upload API and answers 400 ``invalid uploadType``: a plain PUT, a create-only one, a
    multipart upload."""
    import obstore

    store = obstore_gcs(fake_gcs)
    key = f"{unique_name('put')}/x.bin"
    for write in (lambda: obstore.put(store, key, b"x"),
                  lambda: obstore.put(store, key, b"x", mode="create"),
                  lambda: obstore.put(store, key, b"x" * (6 << 20), chunk_size=5 << 20,
                                      use_multipart=True)):
        with pytest.raises(Exception, match="(?s)400 Bad Request.*invalid uploadType"):
            write()
    assert obstore.list(store, prefix=key).collect() == []


def test_fake_gcs_missing_objects_and_buckets(fake_gcs: FakeGcs) -> None:
    """A read of either is 404 for obstore, the bucket's without an XML ``<Code>`` to tell
    them apart; a listing of a missing bucket is 500."""
    import obstore

    with pytest.raises(FileNotFoundError, match="404 Not Found"):
        obstore.get(obstore_gcs(fake_gcs), f"{unique_name('none')}/x")
    with pytest.raises(FileNotFoundError, match="404 Not Found") as info:
        obstore.get(obstore_gcs(fake_gcs, "no-such-bucket"), "x")
    assert "<Code>" not in str(info.value)
    with pytest.raises(Exception, match="(?s)500 Internal Server Error.*<Code>500</Code>"):
        obstore.list(obstore_gcs(fake_gcs, "no-such-bucket"), prefix="x/").collect()


def test_obstore_gcs_deletes_stop_at_a_missing_key(fake_gcs: FakeGcs) -> None:
    """No batch delete on GCS: object_store deletes the keys one by one (10 at once) and its
    error for a missing key ends the call, most keys after it left where they were."""
    import obstore

    store = obstore_gcs(fake_gcs)
    prefix = unique_name("del")
    keys = [f"{prefix}/k{i:03d}" for i in range(40)]
    for key in keys:
        fake_gcs.upload(key, b"x")
    with pytest.raises(FileNotFoundError, match="missing"):
        obstore.delete(store, [keys[0], f"{prefix}/missing", *keys[1:]])
    assert len(obstore.list(store, prefix=prefix).collect()) > 20


def test_fake_gcs_ignores_authorization(fake_gcs: FakeGcs) -> None:
    status, _ = http_json("GET", f"{fake_gcs.endpoint}/{fake_gcs.bucket}?list-type=2",
                          headers={"Authorization": "Bearer not-a-token"})
    assert status == 200
    assert http_json("GET", f"{fake_gcs.endpoint}/{fake_gcs.bucket}?list-type=2")[0] == 200


def test_fake_gcs_restart_starts_empty(fake_gcs: FakeGcs) -> None:
    import obstore

    key = f"{unique_name('gone')}.bin"
    fake_gcs.upload(key, b"x")
    fake_gcs.restart()
    assert obstore.list(obstore_gcs(fake_gcs), prefix=key).collect() == []
    fake_gcs.upload(key, b"y")  # the bucket is there again
