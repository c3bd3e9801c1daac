"""FileIO on real object stores (S3: SeaweedFS and moto; Azure Blob Storage: Azurite; started
by the session): every operation the local disk has, configured with PyIceberg's property
names; create-only writes refused atomically; wrong credentials, an endpoint that does not
answer and throttling; a write whose answer was lost told apart from one that did not happen.

Google Cloud Storage is in tests/floe/test_gcs.py (fake-gcs-server: reads, listings and
deletes; it takes none of object_store's writes).
"""

from __future__ import annotations

import base64
import uuid
from typing import Any
from urllib.parse import unquote

import pytest

from floe.errors import FloeError, NotFound, OutcomeUnknown, ValidationError
from floe.io import FileIO
from tests.faulty_proxy import FaultyProxy
from tests.object_store import Azurite, SeaweedFS

pytestmark = pytest.mark.objectstore


@pytest.fixture(params=["seaweedfs", "moto_s3", "azurite"],
                ids=["seaweedfs", "moto", "azurite"])
def server(request: pytest.FixtureRequest) -> Any:
    return request.getfixturevalue(request.param)


def _root(server: Any) -> str:
    return server.location(f"fileio-{uuid.uuid4().hex[:8]}")


def test_every_operation_on_an_object_store(server: Any) -> None:
    io = FileIO(server.properties())
    root = _root(server)
    io.write(f"{root}/a/one.bin", b"0123456789")
    io.write(f"{root}/a/b/two.bin", b"xy")
    io.write(f"{root}/three.bin", b"")
    assert io.read(f"{root}/a/one.bin") == b"0123456789"
    assert io.read_range(f"{root}/a/one.bin", 3, 4) == b"3456"
    with io.open(f"{root}/a/one.bin") as f:
        f.seek(8)
        assert f.read() == b"89"
    assert io.size(f"{root}/a/one.bin") == 10
    info = io.info(f"{root}/a/b/two.bin")
    assert info is not None and info.size == 2 and info.modified_ms and info.version
    assert io.list(root) == [f"{root}/a/b/two.bin", f"{root}/a/one.bin", f"{root}/three.bin"]
    assert [(f.location, f.size) for f in io.list_info(f"{root}/a")] == [
        (f"{root}/a/b/two.bin", 2), (f"{root}/a/one.bin", 10)]
    assert io.list_dir(root) == ([f"{root}/a"], [f"{root}/three.bin"])
    assert io.is_dir(f"{root}/a") and not io.is_dir(f"{root}/a/one.bin")
    assert io.exists(f"{root}/a") and io.exists(f"{root}/three.bin")
    assert not io.exists(f"{root}/nope")
    assert list(io.read_many([f"{root}/three.bin", f"{root}/a/b/two.bin"])) == [b"", b"xy"]
    io.write(f"{root}/three.bin", b"again", overwrite=True)
    assert io.read(f"{root}/three.bin") == b"again"
    io.delete(f"{root}/three.bin")
    with pytest.raises(NotFound, match="three.bin"):
        io.read(f"{root}/three.bin")
    with pytest.raises(NotFound, match="three.bin"):
        io.delete(f"{root}/three.bin")
    io.delete(f"{root}/three.bin", missing_ok=True)
    assert io.delete_many([f"{root}/a/one.bin", f"{root}/a/b/two.bin", f"{root}/gone"]) == []
    assert io.list(root) == []


def test_a_create_only_write_is_refused_when_the_object_exists(server: Any) -> None:
    io = FileIO(server.properties())
    path = f"{_root(server)}/metadata/v2.metadata.json"
    assert io.exclusive_create(path)
    io.write(path, b"first")
    with pytest.raises(FileExistsError):
        io.write(path, b"second")
    assert io.read(path) == b"first"
    assert [p for p in io.list(path.rsplit("/", 1)[0]) if "probe" in p] == []  # cleaned up


def test_s3a_and_s3n_are_the_same_store(seaweedfs: SeaweedFS) -> None:
    io = FileIO(seaweedfs.s3_properties())
    root = _root(seaweedfs)
    io.write(f"{root}/x", b"1")
    assert io.read(root.replace("s3://", "s3a://") + "/x") == b"1"
    assert io.list(root.replace("s3://", "s3n://")) == [root.replace("s3://", "s3n://") + "/x"]


@pytest.mark.parametrize("store", ["seaweedfs", "azurite"])
def test_wrong_credentials_are_one_clear_error_without_the_secret(
        request: pytest.FixtureRequest, store: str) -> None:
    server = request.getfixturevalue(store)
    secret = "not-the-secret-" + uuid.uuid4().hex
    if isinstance(server, Azurite):  # an account key is base64
        secret = base64.b64encode(secret.encode()).decode()
        io = FileIO({**server.properties(), "adls.account-key": secret})
    else:
        io = FileIO({**server.s3_properties(), "s3.secret-access-key": secret})
    root = _root(server)
    for call in (lambda: io.read(f"{root}/x"),
                 lambda: io.write(f"{root}/x", b"1", overwrite=True),
                 lambda: io.write(f"{root}/y", b"1"),  # create-only
                 lambda: io.list(f"{root}/")):
        with pytest.raises(FloeError) as info:
            call()
        message = str(info.value)
        assert root.split("/fileio-")[0] in message and "\n" not in message, message
        assert "credentials" in message or "access denied" in message, message
        assert secret not in message


def test_azure_from_a_connection_string(azurite: Azurite) -> None:
    """PyIceberg's ``adls.connection-string`` alone (account, key and Blob endpoint), for
    every Azure scheme; without it, the account comes from the location's host."""
    io = FileIO({"adls.connection-string": azurite.connection_string()})
    root = _root(azurite)
    io.write(f"{root}/a.bin", b"conn")
    for scheme in ("abfs", "wasb", "wasbs"):
        other = root.replace("abfss://", f"{scheme}://")
        assert io.read(f"{other}/a.bin") == b"conn"
        assert io.list(other) == [f"{other}/a.bin"]
    props = {k: v for k, v in azurite.properties().items() if k != "adls.account-name"}
    assert FileIO(props).read(f"{root}/a.bin") == b"conn"


def test_azure_with_a_sas_token(azurite: Azurite) -> None:
    """PyIceberg's ``adls.sas-token`` instead of the key: reads, writes (create-only too) and
    listings; a token without write permission refuses a write in one line that holds no
    part of the token. (Deletes are not tried: Azurite answers a Blob Batch under a SAS 500.)"""
    props = {k: v for k, v in azurite.properties().items() if k != "adls.account-key"}
    io = FileIO({**props, "adls.sas-token": azurite.account_sas("rwlac")})
    root = _root(azurite)
    io.write(f"{root}/a.bin", b"sas", overwrite=True)
    io.write(f"{root}/b.bin", b"once")
    with pytest.raises(FileExistsError):
        io.write(f"{root}/b.bin", b"twice")
    assert io.read(f"{root}/a.bin") == b"sas"
    assert io.list(root) == [f"{root}/a.bin", f"{root}/b.bin"]
    read_only = azurite.account_sas("rl")
    io = FileIO({**props, "adls.sas-token": read_only})
    assert io.read(f"{root}/b.bin") == b"once"
    with pytest.raises(FloeError) as info:
        io.write(f"{root}/c.bin", b"no")
    message = str(info.value)
    assert "access denied" in message and "\n" not in message, message
    signature = dict(p.split("=", 1) for p in read_only.split("&"))["sig"]
    assert signature not in message and unquote(signature) not in message


def test_azure_a_missing_blob_and_a_missing_container_are_not_found(azurite: Azurite) -> None:
    io = FileIO(azurite.properties())
    missing = azurite.location(f"nowhere-{uuid.uuid4().hex[:8]}/x.avro")
    with pytest.raises(NotFound, match="x.avro: file does not exist"):
        io.read(missing)
    assert not io.exists(missing) and io.info(missing) is None
    other = missing.replace(f"{azurite.container}@", "no-such-container@")
    for call in (lambda: io.read(other), lambda: io.list(other.rsplit("/", 1)[0])):
        with pytest.raises(NotFound, match="no-such-container.*the bucket or container does "
                                           "not exist [(]ContainerNotFound[)]"):
            call()


def test_azure_deletes_past_one_batch_with_a_missing_blob_among_them(azurite: Azurite) -> None:
    """Azure's Blob Batch takes 256 deletes a request: 600 blobs and one missing go in
    several, the missing one is not a failure, and nothing is left."""
    from concurrent.futures import ThreadPoolExecutor

    io = FileIO(azurite.properties())
    root = _root(azurite)
    paths = [f"{root}/f{i:04d}" for i in range(600)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: io.write(p, b"x", overwrite=True), paths))
    assert len(io.list(root)) == 600
    assert io.delete_many([paths[0], f"{root}/missing", *paths[1:]]) == []
    assert io.list(root) == []


def test_an_endpoint_that_does_not_answer_fails_in_bounded_time(seaweedfs: SeaweedFS) -> None:
    seaweedfs.pause()  # accepts connections, answers nothing
    try:
        io = FileIO({**seaweedfs.s3_properties(), "s3.request-timeout": "0.5",
                     "s3.connect-timeout": "0.5"})
        with pytest.raises(FloeError, match=seaweedfs.bucket):
            io.read(f"s3://{seaweedfs.bucket}/anything")
    finally:
        seaweedfs.resume()


def test_a_refused_connection_is_a_floe_error() -> None:
    io = FileIO({"s3.endpoint": "http://127.0.0.1:9", "s3.access-key-id": "k",
                 "s3.secret-access-key": "s", "s3.connect-timeout": "0.5"})
    with pytest.raises(FloeError, match="s3://bucket/key"):
        io.read("s3://bucket/key")


@pytest.fixture(params=["moto_s3", "azurite"], ids=["moto", "azurite"])
def proxied(request: pytest.FixtureRequest) -> Any:
    """The stores the fault tests put a FaultyProxy in front of."""
    return request.getfixturevalue(request.param)


def test_throttling_is_retried(proxied: Any) -> None:
    with FaultyProxy(proxied.endpoint) as proxy:
        io = FileIO(proxied.properties(proxy.url))
        path = f"{_root(proxied)}/throttled"
        io.write(path, b"ok", overwrite=True)
        proxy.throttle(2, method="GET")
        assert io.read(path) == b"ok"
        assert [s for m, _, s in proxy.requests("GET")] == [503, 503, 200]


def test_a_create_whose_answer_was_lost_is_known_by_what_is_there(proxied: Any) -> None:
    """The PUT happened but its answer was dropped: the bytes there are ours, so the write
    succeeded (a retried conditional PUT would have answered 412 or 409: a lost race)."""
    with FaultyProxy(proxied.endpoint) as proxy:
        io = FileIO(proxied.properties(proxy.url))
        path = f"{_root(proxied)}/v3.metadata.json"
        io.exclusive_create(path)  # the probe first, outside the fault
        proxy.lose_answer(method="PUT")
        io.write(path, b"ours")
        assert io.read(path) == b"ours"
        assert [s for m, _, s in proxy.requests("PUT")][-1] in (200, 201)
        # someone else's bytes there: a lost race, not ours
        other = f"{_root(proxied)}/v4.metadata.json"
        FileIO(proxied.properties()).write(other, b"theirs")
        proxy.lose_answer(method="PUT")
        with pytest.raises(FileExistsError):
            io.write(other, b"ours")


def test_a_create_that_never_arrived_is_an_unknown_outcome(proxied: Any) -> None:
    """Every PUT answered 503 and not retried (a create-only write is sent once): nothing is
    there, and nobody can tell whether a late copy of the request lands: OutcomeUnknown."""
    with FaultyProxy(proxied.endpoint) as proxy:
        io = FileIO(proxied.properties(proxy.url))
        path = f"{_root(proxied)}/v5.metadata.json"
        io.exclusive_create(path)
        proxy.throttle(1, method="PUT")
        with pytest.raises(OutcomeUnknown, match="v5.metadata.json"):
            io.write(path, b"ours")
        assert len(proxy.requests("PUT")) == 3  # the probe's two, then the one refused


def test_bad_properties_name_the_property() -> None:
    with pytest.raises(ValidationError, match="gcs.service.host"):
        FileIO({"gcs.service.host": "127.0.0.1:4443"}).read("gs://b/k")
    with pytest.raises(ValidationError, match="gcs.oauth2.token-expires-at"):
        FileIO({"gcs.oauth2.token": "t", "gcs.oauth2.token-expires-at": "soon"}).read("gs://b/k")
    with pytest.raises(ValidationError, match="adls.blob-storage-scheme"):
        FileIO({"adls.blob-storage-authority": "127.0.0.1:9",
                "adls.blob-storage-scheme": "ftp"}).read("abfss://c@a.dfs.core.windows.net/k")
    with pytest.raises(ValidationError, match="adls.connection-string"):
        FileIO({"adls.connection-string": "AccountName"}).read("abfs://c@a/k")
    with pytest.raises(ValidationError, match="s3.connect-timeout"):
        FileIO({"s3.connect-timeout": "soon"}).read("s3://b/k")
    with pytest.raises(ValidationError, match="s3.path-style-access"):
        FileIO({"s3.path-style-access": "maybe"}).read("s3://b/k")
