"""Object stores for :class:`floe.io.FileIO`: S3 and S3-compatible stores (``s3://``,
``s3a://``, ``s3n://``), Google Cloud Storage (``gs://``) and Azure Data Lake Storage / Blob
Storage (``abfs://``, ``abfss://``, ``wasb://``, ``wasbs://``), through obstore (Rust's
object_store crate: one client per bucket, connection pools, retries with backoff, batched
deletes, ``If-None-Match: *`` for create-only writes).

Configured with PyIceberg's property names (:func:`s3_config` and friends), falling back to
each cloud's standard chain: environment variables, the AWS shared credentials / config files
(static keys of the profile ``AWS_PROFILE``), then the instance's or container's role, which
obstore asks for itself.

Reads retry (5xx, throttling, timeouts) with exponential backoff; a create-only write is sent
once: when its answer is lost, the object is read back (our bytes there: written; other
bytes: someone else's; nothing: :class:`floe.errors.OutcomeUnknown`), because a retried
conditional PUT that had succeeded would answer 412 and look like a lost race.
"""

from __future__ import annotations

import builtins
import configparser
import io
import os
import re
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from floe.errors import FloeError, NotFound, OutcomeUnknown, StoreUnavailable, ValidationError
from floe.io.store import FileInfo, Store

if TYPE_CHECKING:
    from obstore.store import AzureConfig, ClientConfig, GCSConfig, RetryConfig, S3Config

__all__ = ["ObjectStore", "parse_location", "S3_SCHEMES", "GCS_SCHEMES", "AZURE_SCHEMES"]

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
GCS_SCHEMES = frozenset({"gs", "gcs"})
AZURE_SCHEMES = frozenset({"abfs", "abfss", "wasb", "wasbs"})

#: Seconds, unless the properties say otherwise (``s3.connect-timeout``,
#: ``s3.request-timeout``): an endpoint that does not answer fails in bounded time.
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_S = 60.0
#: Retries of a request that failed transiently (5xx, 429 / SlowDown, a dropped connection).
MAX_RETRIES = 4
#: Keys handed to obstore per delete call: S3's DeleteObjects takes 1,000 a request; for
#: Azure obstore splits them into Blob Batch requests of 256 itself.
DELETE_BATCH = 1000
#: Deletes sent at once where each key is its own request (GCS, after a missing key).
DELETE_PARALLEL = 16


@dataclass(frozen=True, slots=True)
class Location:
    """``s3://bucket/a/b`` as (scheme, bucket, key); for Azure the bucket is
    ``container@account...``."""

    scheme: str
    bucket: str
    key: str

    def url(self, key: str) -> str:
        return f"{self.scheme}://{self.bucket}/{key}"


def parse_location(location: str) -> Location:
    scheme, sep, rest = location.partition("://")
    if not sep or not rest:
        raise ValidationError(f"{location}: not an object-store location")
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise ValidationError(f"{location}: no bucket in the location")
    return Location(scheme.lower(), bucket, key)


# -- configuration from properties ---------------------------------------------------------------


def _seconds(props: Mapping[str, str], key: str, default: float) -> timedelta:
    raw = props.get(key)
    try:
        value = float(raw) if raw not in (None, "") else default
    except ValueError:
        raise ValidationError(f"{key}={raw!r}: expected a number of seconds") from None
    if value <= 0:
        raise ValidationError(f"{key}={raw!r}: expected a positive number of seconds")
    return timedelta(seconds=value)


def _bool(props: Mapping[str, str], key: str) -> bool | None:
    raw = props.get(key)
    if raw is None or raw == "":
        return None
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ValidationError(f"{key}={raw!r}: expected true or false")


def _aws_profile() -> dict[str, str]:
    """Static keys and the region of the AWS profile (``AWS_PROFILE``, else ``default``)
    from the shared credentials and config files, when the environment names none."""
    profile = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or "default"
    out: dict[str, str] = {}
    files = [
        (os.environ.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"), profile),
        (os.environ.get("AWS_CONFIG_FILE", "~/.aws/config"),
         profile if profile == "default" else f"profile {profile}"),
    ]
    for path, section in files:
        parser = configparser.ConfigParser()
        try:
            parser.read(os.path.expanduser(path))
        except configparser.Error:
            continue
        if not parser.has_section(section):
            continue
        for src, dst in (("aws_access_key_id", "access_key_id"),
                         ("aws_secret_access_key", "secret_access_key"),
                         ("aws_session_token", "token"), ("region", "region")):
            if parser.has_option(section, src) and dst not in out:
                out[dst] = parser.get(section, src)
    return out


def s3_config(props: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(obstore S3 config, client options) from PyIceberg's ``s3.*`` properties."""
    config: dict[str, Any] = {}
    client: dict[str, Any] = {
        "connect_timeout": _seconds(props, "s3.connect-timeout", CONNECT_TIMEOUT_S),
        "timeout": _seconds(props, "s3.request-timeout", REQUEST_TIMEOUT_S),
    }
    endpoint = props.get("s3.endpoint")
    if endpoint:
        config["endpoint"] = endpoint
    endpoint = endpoint or os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT")
    if endpoint and endpoint.startswith("http://"):
        client["allow_http"] = True  # a local S3-compatible store
    for prop, key in (("s3.access-key-id", "access_key_id"),
                      ("s3.secret-access-key", "secret_access_key"),
                      ("s3.session-token", "token"), ("s3.region", "region"),
                      ("s3.role-arn", "role_arn"), ("s3.role-session-name", "role_session_name"),
                      ("s3.sts-endpoint", "sts_endpoint")):
        if props.get(prop):
            config[key] = props[prop]
    if props.get("s3.proxy-uri"):
        client["proxy_url"] = props["s3.proxy-uri"]
    path_style = _bool(props, "s3.path-style-access")
    virtual = _bool(props, "s3.force-virtual-addressing")
    if virtual or path_style is False:
        config["virtual_hosted_style_request"] = True
    if "access_key_id" not in config and not os.environ.get("AWS_ACCESS_KEY_ID"):
        for key, value in _aws_profile().items():
            config.setdefault(key, value)
    if "region" not in config and not os.environ.get("AWS_REGION") \
            and not os.environ.get("AWS_DEFAULT_REGION"):
        config["region"] = "us-east-1"  # what AWS SDKs assume; S3-compatible stores ignore it
    return config, client


def gcs_config(props: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """(obstore GCS config, client options, credential provider) from PyIceberg's ``gcs.*``
    properties: ``gcs.service.host`` is the endpoint (``http://…`` for an emulator);
    ``gcs.oauth2.token`` a bearer token (until ``gcs.oauth2.token-expires-at``, in ms), or
    ``anon`` for unsigned requests, as gcsfs reads it."""
    config: dict[str, Any] = {}
    client: dict[str, Any] = {
        "connect_timeout": _seconds(props, "gcs.connect-timeout", CONNECT_TIMEOUT_S),
        "timeout": _seconds(props, "gcs.request-timeout", REQUEST_TIMEOUT_S)}
    for prop, key in (("gcs.service-account-file", "service_account"),
                      ("gcs.service-account-key", "service_account_key")):
        if props.get(prop):
            config[key] = props[prop]
    host = props.get("gcs.service.host")
    if host:
        if not host.startswith(("http://", "https://")):
            raise ValidationError(f"gcs.service.host={host!r}: expected an http(s):// URL")
        config["base_url"] = host.rstrip("/")
        if host.startswith("http://"):
            client["allow_http"] = True
    provider = None
    token = props.get("gcs.oauth2.token")
    if token == "anon":
        config["skip_signature"] = True
    elif token:
        raw = props.get("gcs.oauth2.token-expires-at")
        try:
            expires = (datetime.fromtimestamp(int(raw) / 1000, tz=timezone.utc)
                       if raw else None)
        except ValueError:
            raise ValidationError(f"gcs.oauth2.token-expires-at={raw!r}: expected "
                                  "milliseconds since the epoch") from None

        def provider() -> dict[str, Any]:
            return {"token": token, "expires_at": expires}
    return config, client, provider


def azure_config(props: Mapping[str, str], location: Location) -> tuple[dict[str, Any],
                                                                        dict[str, Any]]:
    """(obstore Azure config, client options) from PyIceberg's ``adls.*`` properties; the
    account comes from the location (``abfss://container@account.dfs.core.windows.net/...``)
    unless ``adls.account-name`` or the connection string names it.

    The Blob endpoint, first given wins: ``adls.connection-string``'s ``BlobEndpoint`` (or
    ``DefaultEndpointsProtocol`` + ``EndpointSuffix``), ``adls.blob-storage-authority`` with
    ``adls.blob-storage-scheme`` as PyIceberg's pyarrow FileIO reads them (an authority that
    starts with a dot is a suffix after the account, ``.blob.core.chinacloudapi.cn``; any
    other is a host serving accounts by path, an emulator such as Azurite:
    ``http://127.0.0.1:10000/<account>``), ``adls.account-host`` as adlfs reads it
    (``https://<host>``); else Azure's public cloud. object_store reaches ``abfss://``
    locations through the Blob API, so the ``adls.dfs-*`` properties are not needed."""
    container, _, host = location.bucket.partition("@")
    config: dict[str, Any] = {"container_name": container}
    client: dict[str, Any] = {
        "connect_timeout": _seconds(props, "adls.connect-timeout", CONNECT_TIMEOUT_S),
        "timeout": _seconds(props, "adls.request-timeout", REQUEST_TIMEOUT_S)}
    conn = _connection_string(props.get("adls.connection-string") or "")
    account = (props.get("adls.account-name") or conn.get("AccountName")
               or (host.split(".", 1)[0] if host else None))
    if account:
        config["account_name"] = account
    for prop, key in (("adls.account-key", "account_key"), ("adls.sas-token", "sas_key"),
                      ("adls.token", "token"), ("adls.tenant-id", "tenant_id"),
                      ("adls.client-id", "client_id"), ("adls.client-secret", "client_secret")):
        if props.get(prop):
            config[key] = props[prop]
    for src, dst in (("AccountKey", "account_key"), ("SharedAccessSignature", "sas_key")):
        if conn.get(src):
            config.setdefault(dst, conn[src])
    if _bool(props, "adls.anon"):
        config["skip_signature"] = True
    endpoint = _azure_endpoint(props, conn, account)
    if endpoint:
        config["endpoint"] = endpoint
        if endpoint.startswith("http://"):
            client["allow_http"] = True  # a local emulator
    return config, client


def _connection_string(text: str) -> dict[str, str]:
    """``Key=Value;Key=Value`` (Azure's storage connection string) as a dict."""
    parts: dict[str, str] = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if part.strip() and not sep:
            raise ValidationError("adls.connection-string: expected Key=Value pairs separated "
                                  "by ';'")
        if sep:
            parts[key.strip()] = value.strip()
    return parts


def _azure_endpoint(props: Mapping[str, str], conn: Mapping[str, str],
                    account: str | None) -> str | None:
    if conn.get("BlobEndpoint"):
        return conn["BlobEndpoint"].rstrip("/")
    if conn.get("EndpointSuffix") and account:
        scheme = conn.get("DefaultEndpointsProtocol") or "https"
        return f"{scheme}://{account}.blob.{conn['EndpointSuffix']}"
    authority = props.get("adls.blob-storage-authority")
    if authority:
        scheme = props.get("adls.blob-storage-scheme") or "https"
        if scheme not in ("http", "https"):
            raise ValidationError(f"adls.blob-storage-scheme={scheme!r}: expected http or https")
        if authority.startswith("."):
            if not account:
                raise ValidationError(f"adls.blob-storage-authority={authority!r} needs the "
                                      "account (adls.account-name or the location's host)")
            return f"{scheme}://{account}{authority}"
        return f"{scheme}://{authority}/{account}" if account else f"{scheme}://{authority}"
    host = props.get("adls.account-host")
    return f"https://{host}" if host else None


# -- the store -----------------------------------------------------------------------------------


class ObjectStore(Store):
    """One kind of object store (S3, GCS or Azure) under a set of properties; a client per
    bucket, made on first use."""

    def __init__(self, kind: str, properties: Mapping[str, str]) -> None:
        self.kind = kind
        self.properties = dict(properties)
        self._clients: dict[tuple[str, bool], Any] = {}
        self._exclusive: dict[str, bool] = {}
        self._lock = threading.Lock()

    # -- clients ---------------------------------------------------------------------------

    def _client(self, loc: Location, *, retries: bool = True) -> Any:
        key = (loc.bucket, retries)
        with self._lock:
            client = self._clients.get(key)
        if client is not None:
            return client
        from obstore.store import AzureStore, GCSStore, S3Store

        retry: RetryConfig = {"max_retries": MAX_RETRIES if retries else 0,
                 "backoff": {"init_backoff": timedelta(milliseconds=100),
                             "max_backoff": timedelta(seconds=5), "base": 2.0},
                 "retry_timeout": timedelta(seconds=60)}
        try:
            if self.kind == "s3":
                config, opts = s3_config(self.properties)
                client = S3Store(loc.bucket, config=cast("S3Config", config),
                                 client_options=cast("ClientConfig", opts), retry_config=retry)
            elif self.kind == "gcs":
                config, opts, provider = gcs_config(self.properties)
                client = GCSStore(loc.bucket, config=cast("GCSConfig", config),
                                  client_options=cast("ClientConfig", opts), retry_config=retry,
                                  credential_provider=provider)
            else:
                config, opts = azure_config(self.properties, loc)
                client = AzureStore(config=cast("AzureConfig", config),
                                    client_options=cast("ClientConfig", opts),
                                    retry_config=retry)
        except ValidationError:
            raise
        except Exception as exc:  # obstore's configuration errors
            raise ValidationError(f"{loc.url('')}: cannot configure the {self.kind} client: "
                                  f"{_clean(exc)}") from None
        with self._lock:
            return self._clients.setdefault(key, client)

    # -- reads -----------------------------------------------------------------------------

    def read(self, location: str) -> bytes:
        import obstore

        loc = parse_location(location)
        try:
            return bytes(obstore.get(self._client(loc), loc.key).bytes())
        except Exception as exc:
            raise _error(exc, location) from None

    def read_range(self, location: str, start: int, length: int) -> bytes:
        import obstore

        loc = parse_location(location)
        try:
            return bytes(obstore.get_range(self._client(loc), loc.key, start=start,
                                           length=length))
        except Exception as exc:
            raise _error(exc, location) from None

    def open(self, location: str) -> BinaryIO:
        """The whole object in memory: table files are read whole (manifests, metadata) or
        by Parquet's footer-then-columns reads, which a buffer serves at memory speed."""
        return io.BytesIO(self.read(location))

    def head(self, location: str) -> FileInfo | None:
        import obstore

        loc = parse_location(location)
        try:
            meta = obstore.head(self._client(loc), loc.key)
        except Exception as exc:
            err = _error(exc, location)
            if isinstance(err, NotFound):
                return None
            raise err from None
        return _info(loc, meta)

    def exists(self, location: str) -> bool:
        return self.head(location) is not None or self.is_dir(location)

    def is_dir(self, location: str) -> bool:
        dirs, files = self.list_dir(location, limit=1)
        return bool(dirs or files)

    # -- writes ----------------------------------------------------------------------------

    def _writable(self, location: str) -> None:
        """Refuse a change that unsigned GCS requests cannot make: object_store signs every
        write and delete, asking the instance's metadata server for a token when it has none,
        whose refusal would read as the bucket's."""
        if self.kind == "gcs" and self.properties.get("gcs.oauth2.token") == "anon":
            raise ValidationError(f"{location}: gcs.oauth2.token is 'anon' (unsigned "
                                  "requests), which only read: give a token or a service "
                                  "account to write or delete")

    def write(self, location: str, data: bytes, overwrite: bool) -> None:
        import obstore

        self._writable(location)
        loc = parse_location(location)
        if overwrite:
            try:
                obstore.put(self._client(loc), loc.key, data)
            except Exception as exc:
                raise _error(exc, location) from None
            return
        try:
            obstore.put(self._client(loc, retries=False), loc.key, data, mode="create")
        except Exception as exc:
            err = _error(exc, location)
            if isinstance(err, FileExistsError | ValidationError) or _refused(exc):
                raise err from None
            # The answer is lost: what is there now says what happened.
            try:
                there = self.read(location)
            except NotFound:
                raise OutcomeUnknown(
                    f"{location}: the write may or may not have happened ({_clean(exc)})"
                ) from None
            except FloeError:
                raise OutcomeUnknown(f"{location}: the write may or may not have happened "
                                     f"({_clean(exc)})") from None
            if there != data:
                raise FileExistsError(17, "file already exists", location) from None

    def exclusive_for(self, location: str) -> bool:
        """Whether create-only writes next to ``location`` are refused by the store when the
        object exists (``If-None-Match: *``), found out once per bucket by writing a probe
        object twice (and deleting it)."""
        loc = parse_location(location)
        with self._lock:
            known = self._exclusive.get(loc.bucket)
        if known is not None:
            return known
        directory = location.rsplit("/", 1)[0]
        probe = f"{directory}/.floe-exclusive-probe-{uuid.uuid4().hex}"
        self.write(probe, b"1", overwrite=False)
        try:
            self.write(probe, b"2", overwrite=False)
            honoured = False
        except FileExistsError:
            honoured = True
        finally:
            self.delete(probe, missing_ok=True)
        with self._lock:
            self._exclusive[loc.bucket] = honoured
        return honoured

    def delete(self, location: str, missing_ok: bool) -> None:
        import obstore

        self._writable(location)
        loc = parse_location(location)
        if not missing_ok and self.head(location) is None:
            raise NotFound(f"{location}: file does not exist")
        try:
            obstore.delete(self._client(loc), loc.key)
        except Exception as exc:
            err = _error(exc, location)
            if not (missing_ok and isinstance(err, NotFound)):
                raise err from None

    def delete_many(self, locations: Iterable[str]) -> list[tuple[str, Exception]]:
        import obstore

        by_bucket: dict[str, tuple[Location, list[str]]] = {}
        for location in locations:
            self._writable(location)
            loc = parse_location(location)
            by_bucket.setdefault(f"{loc.scheme}://{loc.bucket}", (loc, []))[1].append(loc.key)
        failed: list[tuple[str, Exception]] = []
        for loc, keys in by_bucket.values():
            client = self._client(loc)
            for i in range(0, len(keys), DELETE_BATCH):
                batch = keys[i:i + DELETE_BATCH]
                try:
                    obstore.delete(client, batch)
                except Exception as exc:
                    err = _error(exc, loc.url(batch[0]))
                    if isinstance(err, NotFound):
                        # a missing key stops object_store's delete where it is: on GCS (no
                        # batch: keys one by one) at that key; on Azure (batches of 256) the
                        # batches after it were seen left, once, in a full test run; the rest
                        # may be left, so each key of this batch goes again, a missing one fine
                        failed += self._delete_each(loc, batch)
                    elif not isinstance(err, NotFound):
                        failed += [(loc.url(k), err) for k in batch]
        return failed

    def _delete_each(self, loc: Location, keys: builtins.list[str]
                     ) -> builtins.list[tuple[str, Exception]]:
        """Delete ``keys`` with a request each (:data:`DELETE_PARALLEL` at once), missing
        ones fine; the ones that could not be deleted, with why."""
        from concurrent.futures import ThreadPoolExecutor

        def one(key: str) -> tuple[str, Exception] | None:
            try:
                self.delete(loc.url(key), missing_ok=True)
            except (FloeError, OSError) as exc:
                return loc.url(key), exc
            return None

        with ThreadPoolExecutor(DELETE_PARALLEL) as pool:
            return [f for f in pool.map(one, keys) if f is not None]

    # -- listings --------------------------------------------------------------------------

    def list(self, prefix: str) -> Iterator[FileInfo]:
        import obstore

        loc = parse_location(prefix.rstrip("/") + "/")
        try:
            for chunk in obstore.list(self._client(loc), loc.key, chunk_size=1000):
                for meta in sorted(chunk, key=lambda m: m["path"]):
                    yield _info(loc, meta)
        except Exception as exc:
            raise _error(exc, prefix) from None

    def list_dir(self, prefix: str, limit: int | None = None
                 ) -> tuple[builtins.list[str], builtins.list[str]]:
        import obstore

        loc = parse_location(prefix.rstrip("/") + "/")
        try:
            result = obstore.list_with_delimiter(self._client(loc), loc.key)
        except Exception as exc:
            err = _error(exc, prefix)
            if isinstance(err, NotFound):
                return [], []
            raise err from None
        dirs = sorted(loc.url(p.rstrip("/")) for p in result["common_prefixes"])
        files = sorted(loc.url(m["path"]) for m in result["objects"])
        return dirs[:limit], files[:limit]


def _info(loc: Location, meta: Any) -> FileInfo:
    modified = meta.get("last_modified")
    return FileInfo(loc.url(meta["path"]), int(meta["size"]),
                    int(modified.timestamp() * 1000) if modified is not None else None,
                    meta.get("e_tag") or meta.get("version"))


_STATUS = re.compile(r"status code: (\d{3})(?: ([A-Za-z ]+))?")
_CODE = re.compile(r"<Code>(\w+)</Code>")
#: The stores' error codes for a bucket (S3, GCS) or container (Azure) that is not there.
_NO_BUCKET = frozenset({"NoSuchBucket", "ContainerNotFound"})


def _status(exc: BaseException) -> int | None:
    m = _STATUS.search(str(exc))
    return int(m.group(1)) if m else None


def _clean(exc: BaseException) -> str:
    """What went wrong in a few words: the HTTP status and the store's error code when the
    store answered (``403 Forbidden, SignatureDoesNotMatch``), else obstore's first line; never
    a signature or a credential."""
    text = str(exc)
    m = _STATUS.search(text)
    if m:
        code = _CODE.search(text)
        said = f"{m.group(1)} {m.group(2) or ''}".strip()
        return f"{said}, {code.group(1)}" if code else said
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    for marker in ("X-Amz-Credential=", "X-Amz-Signature=", "sig=", "Signature="):
        if marker in first:
            first = first.split(marker, 1)[0] + marker + "…"
    return first[:300]


def _refused(exc: BaseException) -> bool:
    """A refusal that is an answer (the request was rejected, nothing was written)."""
    from obstore.exceptions import (
        NotSupportedError,
        PermissionDeniedError,
        UnauthenticatedError,
    )

    status = _status(exc)
    return isinstance(exc, PermissionDeniedError | UnauthenticatedError | NotSupportedError) \
        or (status is not None and 400 <= status < 500 and status not in (408, 429))


def _error(exc: BaseException, location: str) -> Exception:
    """obstore's exception as floe's, naming the location."""
    from obstore.exceptions import (
        AlreadyExistsError,
        NotFoundError,
        PermissionDeniedError,
        PreconditionError,
        UnauthenticatedError,
    )

    status = _status(exc)
    if isinstance(exc, NotFoundError | FileNotFoundError) or status == 404:
        code = _CODE.search(str(exc))
        if code and code.group(1) in _NO_BUCKET:
            return NotFound(f"{location}: the bucket or container does not exist "
                            f"({code.group(1)})")
        return NotFound(f"{location}: file does not exist")
    if isinstance(exc, AlreadyExistsError | PreconditionError) or status == 412:
        return FileExistsError(17, "file already exists", location)
    if isinstance(exc, UnauthenticatedError) or status == 401:
        return StoreUnavailable(f"{location}: the store refused the credentials "
                                f"({_clean(exc)})")
    if isinstance(exc, PermissionDeniedError) or status == 403:
        return StoreUnavailable(f"{location}: access denied: check the credentials and the "
                                f"rights on the bucket ({_clean(exc)})")
    if isinstance(exc, FloeError):
        return exc
    if status is not None and 400 <= status < 500 and status not in (408, 429):
        return FloeError(f"{location}: {_clean(exc)}")  # an answer about this request
    return StoreUnavailable(f"{location}: {_clean(exc)}")  # no answer, or the store failing
