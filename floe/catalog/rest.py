"""An Iceberg REST catalog client (the REST catalog OpenAPI spec; Polaris, Lakekeeper,
Nessie, Gravitino, Unity, AWS Glue and S3 Tables all speak it), configured with PyIceberg's
property names::

    [catalogs.lake]
    type = "rest"
    uri = "https://catalog.example.com/api/catalog"
    credential = "${CLIENT_ID}:${CLIENT_SECRET}"   # OAuth2 client credentials
    warehouse = "analytics"
    "s3.region" = "eu-west-1"                       # storage properties for the FileIO

Properties:

- ``uri`` (required); ``warehouse`` (sent to ``GET /v1/config``); ``prefix`` (usually from
  the config answer). The config's ``defaults`` lie under the catalog's own properties and
  its ``overrides`` over them, as in PyIceberg and Java.
- Authentication: ``credential`` = ``client_id:client_secret`` (or a secret alone): an
  OAuth2 client-credentials grant posted as a form (the client id and secret in the body, as
  PyIceberg and Java send them) to ``oauth2-server-uri`` (default ``<uri>/v1/oauth/tokens``)
  with ``scope`` (default ``catalog``) and ``audience`` / ``resource`` when set. ``token``: a
  bearer token to start with. A token is renewed before it expires (``expires_in``, else the
  JWT's ``exp``) and once more when the catalog answers 401. Or AWS SigV4
  (``rest.sigv4-enabled = "true"``, ``rest.signing-region``, ``rest.signing-name``, default
  ``execute-api``): every request is signed with the keys of ``client.access-key-id`` /
  ``client.secret-access-key`` / ``client.session-token``, else ``s3.*``'s, else the AWS
  environment variables and shared profile.
- ``header.NAME = VALUE``: extra headers. ``X-Iceberg-Access-Delegation`` is
  ``vended-credentials`` unless set (as PyIceberg sends it); an empty value leaves it out.
- ``namespace-separator`` (default ``%1F``) joins namespace levels in paths;
  ``rest-page-size`` asks for pages of that many names when listing.
- Time limits (Java's names): ``rest.client.connection-timeout-ms`` (default 10 s) and
  ``rest.client.socket-timeout-ms`` (default 60 s, for each read of an answer);
  ``rest.client.max-retries`` (default 4).
- Storage properties (``s3.*``, ``gcs.*``, ``adls.*``) configure the catalog's FileIO; the
  ``config`` of a loaded table and the ``storage-credentials`` of the longest matching prefix
  (from the load answer, or from ``/credentials`` when the config's ``endpoints`` list it)
  lie over them for that table's FileIO.

Requests that change nothing (GET, HEAD) are retried with exponential backoff after a
connection error, a timeout, 429 or 5xx; a request that changes something is sent again only
when it certainly was not sent (the connection could not be made) or was refused unread
(401, after renewing the token). A commit (requirements + updates, ``CommitTableRequest``)
that fails its requirements is a :class:`~floe.errors.CommitConflict` (409) which the
transaction retries on fresh metadata; a 5xx answer, a timeout or a connection lost after
the request went out is :class:`~floe.errors.CommitStateUnknown` (nothing written is
deleted; refreshing the table shows which state it is in). Errors name the catalog and
what was asked, with the server's ``error.type`` and ``error.message``; credentials and
tokens never appear in a message, a log line or a ``repr``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import http.client
import json
import logging
import os
import random
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from floe.cache import LRUCache
from floe.catalog.base import (
    Catalog,
    Namespace,
    NamespaceAlreadyExists,
    NamespaceNotEmpty,
    TableAlreadyExists,
    TableIdentifier,
    UnsupportedOperation,
    read_metadata,
    to_namespace,
)
from floe.errors import (
    CatalogUnavailable,
    CommitConflict,
    CommitStateUnknown,
    FloeError,
    NotFound,
    OutcomeUnknown,
    ValidationError,
)
from floe.io import FileIO
from floe.catalog.rest_options import (  # noqa: F401 - part of this module's names
    URI,
    WAREHOUSE,
    PREFIX,
    CREDENTIAL,
    TOKEN,
    OAUTH2_SERVER_URI,
    SCOPE,
    DEFAULT_SCOPE,
    AUDIENCE,
    RESOURCE,
    HEADER_PREFIX,
    SIGV4,
    SIGV4_REGION,
    SIGV4_SERVICE,
    DEFAULT_SIGV4_SERVICE,
    NAMESPACE_SEPARATOR,
    DEFAULT_NAMESPACE_SEPARATOR,
    PAGE_SIZE,
    CONNECT_TIMEOUT,
    SOCKET_TIMEOUT,
    MAX_RETRIES,
    DEFAULT_CONNECT_TIMEOUT_MS,
    DEFAULT_SOCKET_TIMEOUT_MS,
    DEFAULT_MAX_RETRIES,
    ACCESS_DELEGATION,
    DEFAULT_ACCESS_DELEGATION,
    STORAGE_PREFIXES,
    CREDENTIALS_ENDPOINT,
    PLAN_ENDPOINT,
    PLAN_POLLS,
    TRANSACTIONS_ENDPOINT,
    OPTIONS,
    OPTION_PREFIXES,
)
from floe.metadata import TableMetadata, metadata_from_json, new_table_metadata
from floe.partitioning import UNPARTITIONED, PartitionSpec
from floe.schema import Schema
from floe.sorting import UNSORTED_SORT_ORDER, SortOrder

if TYPE_CHECKING:
    from floe.scan.planning import ScanPlan
    from floe.table import Table
    from floe.table.updates import TableRequirement, TableUpdate

__all__ = ["CommitRefused", "RestCatalog", "TableAnswer", "sigv4_headers"]

log = logging.getLogger(__name__)

#: Statuses worth asking again for a request that changes nothing.
_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_BACKOFF_S = 0.2
_MAX_BACKOFF_S = 5.0
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class CommitRefused(ValidationError):
    """The catalog answered a commit with a refusal (4xx other than 409): nothing changed.
    ``status`` and ``error_type`` are the catalog's (its ``error.type``), for a server that
    passes the refusal on to its own client."""

    def __init__(self, message: str, status: int = 400,
                 error_type: str = "BadRequestException") -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type


class _NotSent(Exception):
    """The connection could not be made: the request never reached the server."""


@dataclass(frozen=True, slots=True)
class _Response:
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None


# -- HTTP ---------------------------------------------------------------------------------


class _Transport:
    """HTTP/1.1 over ``http.client``, with kept-alive connections per thread for requests
    that change nothing, and a fresh connection for every other one (so a failure after
    sending is told apart from a stale pooled connection)."""

    def __init__(self, connect_timeout: float, socket_timeout: float) -> None:
        self.connect_timeout = connect_timeout
        self.socket_timeout = socket_timeout
        self._local = threading.local()
        self._open: set[http.client.HTTPConnection] = set()  # kept alive, in some pool
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None

    def _connect(self, scheme: str, host: str, port: int | None) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            conn = http.client.HTTPSConnection(host, port, timeout=self.connect_timeout,
                                               context=self._ssl)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=self.connect_timeout)
        try:
            conn.connect()
        except OSError as e:
            conn.close()
            raise _NotSent(f"cannot connect to {host}:{port or ''}: "
                           f"{e.strerror or type(e).__name__}") from None
        if conn.sock is not None:
            conn.sock.settimeout(self.socket_timeout)
        return conn

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None,
             *, reuse: bool) -> _Response:
        parts = urllib.parse.urlsplit(url)
        scheme, host, port = parts.scheme, parts.hostname or "", parts.port
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        key = (scheme, host, port)
        pool: dict[tuple[str, str, int | None], http.client.HTTPConnection] = \
            self._local.__dict__.setdefault("pool", {})
        conn = pool.pop(key, None) if reuse else None
        if conn is not None and conn.sock is None:  # closed (by close()) while pooled
            conn = None
        pooled = conn is not None
        if conn is None:
            conn = self._connect(scheme, host, port)
        try:
            conn.request(method, target, body=body, headers=dict(headers))
            response = conn.getresponse()
            data = response.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self._close(conn)
            if pooled:  # the server closed the idle connection: ask once more on a new one
                return self.send(method, url, headers, body, reuse=False)
            raise
        except BaseException:
            self._close(conn)
            raise
        answer = _Response(response.status,
                           {k.lower(): v for k, v in response.getheaders()}, data)
        if reuse and not response.will_close:
            pool[key] = conn
            with self._lock:
                self._open.add(conn)
        else:
            self._close(conn)
        return answer

    def _close(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        with self._lock:
            self._open.discard(conn)

    def close(self) -> None:
        with self._lock:
            conns, self._open = self._open, set()
        for conn in conns:
            conn.close()

    def __del__(self) -> None:  # a catalog dropped without close() leaves no socket open
        self.close()


# -- AWS SigV4 ----------------------------------------------------------------------------


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sigv4_headers(
    method: str, url: str, body: bytes | None, *, access_key: str, secret_key: str,
    region: str, service: str, session_token: str | None = None,
    amz_date: str | None = None,
) -> dict[str, str]:
    """The headers that sign one request with AWS Signature Version 4 (``Authorization``,
    ``X-Amz-Date``, ``X-Amz-Content-SHA256``, ``X-Amz-Security-Token`` with a session
    token), signing ``host`` and those. The path is URI-encoded once more for every service
    but ``s3``, as AWS (and botocore) do."""
    parts = urllib.parse.urlsplit(url)
    amz_date = amz_date or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    payload = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA256
    path = parts.path or "/"
    if service != "s3":
        path = urllib.parse.quote(path, safe="/~")
    query = sorted((urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                   for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    host = parts.netloc.rsplit("@", 1)[-1]
    if (parts.scheme, parts.port) in (("http", 80), ("https", 443)):
        host = parts.hostname or host
    signed = {"host": host, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    if session_token:
        signed["x-amz-security-token"] = session_token
    names = sorted(signed)
    canonical = "\n".join([
        method.upper(), path, "&".join(f"{k}={v}" for k, v in query),
        "".join(f"{n}:{signed[n].strip()}\n" for n in names), ";".join(names), payload,
    ])
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(("AWS4" + secret_key).encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    out = {
        "Authorization": f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                         f"SignedHeaders={';'.join(names)}, Signature={signature}",
        "X-Amz-Date": amz_date, "X-Amz-Content-SHA256": payload,
    }
    if session_token:
        out["X-Amz-Security-Token"] = session_token
    return out


# -- the catalog ---------------------------------------------------------------------------


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _int_option(props: Mapping[str, str], key: str, default: int) -> int:
    raw = props.get(key)
    if raw in (None, ""):
        return default
    try:
        value = int(str(raw))
    except ValueError:
        raise ValidationError(f"{key}={raw!r}: expected an integer") from None
    if value < 0:
        raise ValidationError(f"{key}={raw!r}: must not be negative")
    return value


def _bool_option(props: Mapping[str, str], key: str) -> bool:
    raw = str(props.get(key, "")).strip().lower()
    if raw in ("", "false", "0", "no"):
        return False
    if raw in ("true", "1", "yes"):
        return True
    raise ValidationError(f"{key}={props[key]!r}: expected true or false")


def _jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim (seconds since the epoch) of a JWT, if the token is one."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    exp = payload.get("exp") if isinstance(payload, dict) else None
    return float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None


@dataclass(frozen=True, slots=True)
class TableAnswer:
    """A catalog's answer with a table (``LoadTableResult``, ``CommitTableResponse``): where
    its metadata is (None for a staged create), the metadata, and the storage configuration
    the catalog handed out with it (``config``, ``storage-credentials``) as answered."""

    location: str | None
    metadata: TableMetadata
    config: dict[str, str]
    storage_credentials: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Loaded:
    """One answer of loadTable (or create / register): where the metadata is, the metadata,
    and the FileIO for the table's files."""

    location: str
    metadata: TableMetadata
    io: FileIO


class RestCatalog(Catalog):
    """A catalog behind the Iceberg REST protocol (see the module docstring for the
    properties). Nothing is asked of the server until the first call, which reads
    ``GET /v1/config``."""

    def __init__(self, name: str, properties: Mapping[str, str],
                 io: FileIO | None = None) -> None:
        props = {k: str(v) for k, v in properties.items()}
        if not props.get(URI):
            raise ValidationError(f"catalog {name!r}: a REST catalog needs a 'uri'")
        super().__init__(name, io if io is not None else FileIO(
            {k: v for k, v in props.items() if k.startswith(STORAGE_PREFIXES)}))
        self._user = props
        self.properties: dict[str, str] = dict(props)
        self.uri = props[URI].rstrip("/")
        self._transport = _Transport(
            _int_option(props, CONNECT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT_MS) / 1000,
            _int_option(props, SOCKET_TIMEOUT, DEFAULT_SOCKET_TIMEOUT_MS) / 1000)
        self._max_retries = _int_option(props, MAX_RETRIES, DEFAULT_MAX_RETRIES)
        self._sigv4 = _bool_option(props, SIGV4)
        credential = props.get(CREDENTIAL) or None
        self._client_id: str | None = None
        self._client_secret: str | None = None
        if credential is not None:
            if ":" in credential:
                self._client_id, self._client_secret = credential.split(":", 1)
            else:
                self._client_secret = credential
        self._token_url = props.get(OAUTH2_SERVER_URI) or f"{self.uri}/v1/oauth/tokens"
        self._token: str | None = props.get(TOKEN) or None
        self._token_expires: float | None = None if self._token is None else \
            _jwt_expiry(self._token)
        self._token_lifetime = 0.0  # seconds, of the token fetched last
        self._token_lock = threading.Lock()
        self._config_lock = threading.Lock()
        self._configured = False
        self._endpoints: frozenset[str] | None = None
        self._separator = DEFAULT_NAMESPACE_SEPARATOR
        self._loaded: LRUCache[str, TableMetadata] = LRUCache(64)
        self._ios: LRUCache[tuple[tuple[str, str], ...], FileIO] = LRUCache(64)

    def __repr__(self) -> str:
        return f"RestCatalog({self.name!r}, {self.uri!r})"

    def close(self) -> None:
        self._transport.close()

    def _scrub(self, text: str) -> str:
        """``text`` without the catalog's secrets (nor a token it was given)."""
        from floe.catalog.config import redact

        text = redact(text, self._user)
        return text.replace(self._token, "***") if self._token else text

    # -- configuration ---------------------------------------------------------------------

    def _ensure_config(self) -> None:
        if self._configured:
            return
        with self._config_lock:
            if self._configured:
                return
            query = {WAREHOUSE: self._user[WAREHOUSE]} if self._user.get(WAREHOUSE) else {}
            url = f"{self.uri}/v1/config"
            if query:
                url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
            answer = self._request("GET", url, what="reading the catalog's configuration",
                                   configured=False)
            doc = answer.json()
            if answer.status != 200 or not isinstance(doc, dict):
                raise self._error(answer, "reading the catalog's configuration (GET "
                                  "/v1/config)")
            defaults, overrides = doc.get("defaults") or {}, doc.get("overrides") or {}
            if not isinstance(defaults, dict) or not isinstance(overrides, dict):
                raise FloeError(f"catalog {self.name!r}: /v1/config answered no defaults / "
                                f"overrides objects")
            merged = {**{k: str(v) for k, v in defaults.items()}, **self._user,
                      **{k: str(v) for k, v in overrides.items()}}
            self.properties = merged
            self.uri = (merged.get(URI) or self.uri).rstrip("/")
            endpoints = doc.get("endpoints")
            self._endpoints = frozenset(" ".join(str(e).split()) for e in endpoints) \
                if isinstance(endpoints, list) else None
            separator = urllib.parse.unquote(merged.get(NAMESPACE_SEPARATOR)
                                             or DEFAULT_NAMESPACE_SEPARATOR)
            if not separator:
                raise ValidationError(f"catalog {self.name!r}: {NAMESPACE_SEPARATOR} must not "
                                      "be empty")
            self._separator = urllib.parse.quote(separator, safe="")
            storage = {k: v for k, v in merged.items() if k.startswith(STORAGE_PREFIXES)}
            # the server's defaults under the catalog's own storage properties, overrides over
            self.io = self.io.with_properties({
                **{k: v for k, v in storage.items() if k in defaults},
                **self.io.properties,
                **{k: v for k, v in storage.items() if k in overrides}})
            self._configured = True

    def supports(self, endpoint: str) -> bool:
        """Whether ``GET /v1/config``'s ``endpoints`` lists ``endpoint`` (``"POST
        /v1/{prefix}/transactions/commit"``); False when the server lists none."""
        self._ensure_config()
        return self._endpoints is not None and " ".join(endpoint.split()) in self._endpoints

    @property
    def prefix(self) -> str:
        self._ensure_config()
        return self.properties.get(PREFIX, "").strip("/")

    def _url(self, *segments: str, query: Mapping[str, str] | None = None) -> str:
        """``<uri>/v1/<prefix>/<segments>`` (segments already encoded)."""
        prefix = self.prefix
        path = "/".join(s for s in ("v1", prefix, *segments) if s)
        url = f"{self.uri}/{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
        return url

    def _ns_path(self, ns: Namespace) -> str:
        return self._separator.join(urllib.parse.quote(level, safe="") for level in ns)

    def _table_path(self, ident: TableIdentifier) -> tuple[str, ...]:
        return ("namespaces", self._ns_path(ident.namespace), "tables",
                urllib.parse.quote(ident.name, safe=""))

    # -- authentication --------------------------------------------------------------------

    def _fetch_token(self) -> None:
        """A new token by OAuth2 client credentials (under the token lock)."""
        form = {"grant_type": "client_credentials",
                "client_secret": self._client_secret or "",
                "scope": self.properties.get(SCOPE) or DEFAULT_SCOPE}
        if self._client_id is not None:
            form["client_id"] = self._client_id
        for key in (AUDIENCE, RESOURCE):
            if self.properties.get(key):
                form[key] = self.properties[key]
        body = urllib.parse.urlencode(form).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   "Accept": "application/json", **self._extra_headers()}
        started = time.time()
        what = f"asking {self._token_url} for an OAuth2 token"
        answer = self._send_with_retries("POST", self._token_url, headers, body, what,
                                         retry=True)
        doc = answer.json()
        if answer.status != 200 or not isinstance(doc, dict) \
                or not isinstance(doc.get("access_token"), str):
            said = ""
            if isinstance(doc, dict):
                said = " ".join(str(doc[k]) for k in ("error", "error_description") if k in doc)
            raise CatalogUnavailable(self._scrub(
                f"catalog {self.name!r}: the OAuth2 server {self._token_url} refused the "
                f"credential ({answer.status}{' ' + _one_line(said) if said else ''})"))
        self._token = str(doc["access_token"])
        expires_in = doc.get("expires_in")
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool) \
                and expires_in > 0:
            self._token_expires = started + float(expires_in)
        else:
            self._token_expires = _jwt_expiry(self._token)
        self._token_lifetime = 0.0 if self._token_expires is None else \
            max(self._token_expires - started, 0.0)
        log.debug("catalog %s: new OAuth2 token (expires in %s s)", self.name, expires_in)

    def _auth_header(self, *, renew: bool = False) -> str | None:
        """``Bearer <token>``, fetched or renewed first when needed (``renew``: the last one
        was refused)."""
        if self._client_secret is None:
            if renew:
                return None
            return f"Bearer {self._token}" if self._token else None
        with self._token_lock:
            if renew or self._token is None or self._expiring():
                self._fetch_token()
            return f"Bearer {self._token}"

    def _expiring(self) -> bool:
        """Whether the token expires within the last tenth of its lifetime (at most a
        minute before it expires)."""
        if self._token_expires is None:
            return False
        return self._token_expires - time.time() <= min(60.0, self._token_lifetime / 10)

    def _extra_headers(self) -> dict[str, str]:
        return {k[len(HEADER_PREFIX):]: v for k, v in self.properties.items()
                if k.startswith(HEADER_PREFIX)}

    def _headers(self, *, renew: bool = False) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "floe",
                   "X-Client-Version": "floe", ACCESS_DELEGATION: DEFAULT_ACCESS_DELEGATION}
        extra = self._extra_headers()
        for k, v in extra.items():
            for existing in [h for h in headers if h.lower() == k.lower()]:
                del headers[existing]
            headers[k] = v
        headers = {k: v for k, v in headers.items() if v != ""}
        if not self._sigv4:
            auth = self._auth_header(renew=renew)
            if auth is not None:
                headers["Authorization"] = auth
        return headers

    def _sign(self, method: str, url: str, headers: dict[str, str], body: bytes | None
              ) -> None:
        from floe.io.objectstore import _aws_profile

        p = self.properties
        access = p.get("client.access-key-id") or p.get("s3.access-key-id")
        secret = p.get("client.secret-access-key") or p.get("s3.secret-access-key")
        session = p.get("client.session-token") or p.get("s3.session-token")
        if not access or not secret:
            access, secret = os.environ.get("AWS_ACCESS_KEY_ID"), \
                os.environ.get("AWS_SECRET_ACCESS_KEY")
            session = os.environ.get("AWS_SESSION_TOKEN")
        profile = _aws_profile() if not access or not secret else {}
        access = access or profile.get("access_key_id")
        secret = secret or profile.get("secret_access_key")
        session = session or profile.get("token")
        if not access or not secret:
            raise FloeError(f"catalog {self.name!r}: {SIGV4} is set but no AWS keys were found "
                            "(client.access-key-id / s3.access-key-id, AWS_ACCESS_KEY_ID or "
                            "a shared profile)")
        region = (p.get(SIGV4_REGION) or p.get("client.region") or p.get("s3.region")
                  or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
                  or profile.get("region") or "us-east-1")
        headers.update(sigv4_headers(
            method, url, body, access_key=access, secret_key=secret, region=region,
            service=p.get(SIGV4_SERVICE) or DEFAULT_SIGV4_SERVICE, session_token=session))

    # -- requests --------------------------------------------------------------------------

    def _send_with_retries(self, method: str, url: str, headers: Mapping[str, str],
                           body: bytes | None, what: str, *, retry: bool) -> _Response:
        """One request; with ``retry`` (it changes nothing) asked again with backoff after a
        connection error, a timeout, 429 or 5xx. A request that changes something is only
        sent again when the connection could not be made. Connection errors of the last
        attempt: FloeError (not sent), OutcomeUnknown (sent, the answer lost)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                answer = self._transport.send(method, url, headers, body, reuse=retry)
            except _NotSent as e:
                if attempt > self._max_retries:
                    raise CatalogUnavailable(f"catalog {self.name!r}: {what}: {e}") from None
            except (TimeoutError, socket.timeout, OSError, http.client.HTTPException) as e:
                reason = _one_line(str(e) or type(e).__name__)
                if not retry:
                    raise OutcomeUnknown(
                        f"catalog {self.name!r}: {what}: the request was sent but its answer "
                        f"was lost ({type(e).__name__}: {reason})") from None
                if attempt > self._max_retries:
                    raise CatalogUnavailable(
                        f"catalog {self.name!r}: {what}: no answer after {attempt} attempts "
                        f"({type(e).__name__}: {reason})") from None
            else:
                if not (retry and answer.status in _RETRY_STATUSES
                        and attempt <= self._max_retries):
                    return answer
                wait = self._retry_after(answer)
                log.info("catalog %s: %s: %s, asking again", self.name, what, answer.status)
                time.sleep(wait if wait is not None else self._backoff(attempt))
                continue
            time.sleep(self._backoff(attempt))

    @staticmethod
    def _backoff(attempt: int) -> float:
        delay = min(_BACKOFF_S * 2.0 ** (attempt - 1), _MAX_BACKOFF_S)
        return delay + random.uniform(0, delay / 10)

    @staticmethod
    def _retry_after(answer: _Response) -> float | None:
        raw = answer.headers.get("retry-after")
        try:
            return min(float(raw), 30.0) if raw else None
        except ValueError:
            return None

    def _request(self, method: str, url: str, *, what: str, body: Any = None,
                 configured: bool = True) -> _Response:
        """A request to the catalog: authenticated (renewing the token once on a 401),
        retried when it changes nothing. A 5xx answer to one that changes something is
        OutcomeUnknown (the server had it: it may have done it)."""
        if configured:
            self._ensure_config()
        data = json.dumps(body).encode() if body is not None else None
        retry = method in ("GET", "HEAD")
        renewed = False
        while True:
            headers = self._headers(renew=renewed)
            if data is not None:
                headers["Content-Type"] = "application/json"
            if self._sigv4:
                self._sign(method, url, headers, data)
            log.debug("catalog %s: %s %s", self.name, method, url)
            answer = self._send_with_retries(method, url, headers, data, what, retry=retry)
            if answer.status == 401 and not renewed and self._client_secret is not None:
                renewed = True  # refused unread: renew the token and ask once more
                continue
            if answer.status >= 500 and not retry:  # read and failed: not "unavailable"
                raise self._error(answer, f"{what}: the catalog failed after the request was "
                                  "sent, so it may or may not have happened", OutcomeUnknown)
            return answer

    def _error(self, answer: _Response, what: str,
               kind: Callable[[str], FloeError] = FloeError) -> FloeError:
        """The catalog's refusal as one line: what was asked, the status, the spec's
        ``error.type`` and ``error.message``."""
        doc = answer.json()
        err = doc.get("error") if isinstance(doc, dict) else None
        said = ""
        if isinstance(err, dict):
            said = " ".join(str(err[k]) for k in ("type", "message") if err.get(k))
        elif isinstance(doc, dict) and "error" in doc:  # an OAuth-style error
            said = " ".join(str(doc[k]) for k in ("error", "error_description") if k in doc)
        elif answer.body and not answer.body.lstrip().startswith(b"<"):
            said = answer.body[:200].decode(errors="replace")
        reason = http.client.responses.get(answer.status, "")
        detail = f"{answer.status} {reason}".strip() + (f": {_one_line(said)}" if said else "")
        if answer.status in (401, 403):
            detail += " (check the catalog's credential, token or signing keys)"
            if kind is FloeError:  # refused whatever it was asked: the catalog is unusable
                kind = CatalogUnavailable
        elif answer.status >= 500 and kind is FloeError:  # failing (after the retries)
            kind = CatalogUnavailable
        return kind(self._scrub(f"catalog {self.name!r}: {what} ({detail})"))

    def _get_json(self, url: str, what: str, not_found: str | None = None) -> Any:
        answer = self._request("GET", url, what=what)
        if answer.status == 404 and not_found is not None:
            raise self._error(answer, not_found, NotFound)
        if answer.status != 200:
            raise self._error(answer, what)
        doc = answer.json()
        if not isinstance(doc, dict):
            raise FloeError(f"catalog {self.name!r}: {what}: the answer is not a JSON object")
        return doc

    def _pages(self, url_of: Callable[[dict[str, str]], str], key: str, what: str,
               not_found: str) -> Iterator[Any]:
        """Every item of a paged listing (``pageToken`` / ``next-page-token``)."""
        query: dict[str, str] = {}
        page_size = self.properties.get(PAGE_SIZE)
        if page_size:
            query["pageSize"] = str(_int_option(self.properties, PAGE_SIZE, 0))
        seen: set[str] = set()
        while True:
            doc = self._get_json(url_of(query), what, not_found)
            items = doc.get(key)
            if not isinstance(items, list):
                raise FloeError(f"catalog {self.name!r}: {what}: the answer has no {key!r} "
                                "list")
            yield from items
            token = doc.get("next-page-token")
            if not token or not items:
                return
            if token in seen:
                raise FloeError(f"catalog {self.name!r}: {what}: the server repeated page "
                                f"token {str(token)[:40]!r}")
            seen.add(token)
            query["pageToken"] = str(token)

    # -- namespaces ------------------------------------------------------------------------

    def list_namespaces(self, parent: str | Iterable[str] = ()) -> list[Namespace]:
        """Namespaces directly under ``parent``. A server that lists deeper namespaces at
        once (or only those) contributes their first level below ``parent``."""
        levels = to_namespace(parent) if parent not in ((), "") else ()
        name = ".".join(levels) or "the top level"

        def url(query: dict[str, str]) -> str:
            q = dict(query)
            if levels:
                q["parent"] = urllib.parse.unquote(self._separator).join(levels)
            return self._url("namespaces", query=q)

        found: set[Namespace] = set()
        for item in self._pages(url, "namespaces", f"listing namespaces under {name}",
                                f"namespace {name} does not exist"):
            if not isinstance(item, list) or not all(isinstance(p, str) for p in item):
                continue
            ns = tuple(item)
            if len(ns) > len(levels) and ns[:len(levels)] == levels:
                found.add(ns[:len(levels) + 1])
        return sorted(found)

    def create_namespace(self, namespace: str | Iterable[str],
                         properties: Mapping[str, str] | None = None) -> None:
        ns = to_namespace(namespace)
        what = f"creating namespace {'.'.join(ns)}"
        answer = self._request("POST", self._url("namespaces"), what=what,
                               body={"namespace": list(ns), "properties": dict(properties or {})})
        if answer.status == 409:
            raise self._error(answer, what, NamespaceAlreadyExists)
        if answer.status not in (200, 204):
            raise self._error(answer, what)

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        ns = to_namespace(namespace)
        what = f"dropping namespace {'.'.join(ns)}"
        answer = self._request("DELETE", self._url("namespaces", self._ns_path(ns)), what=what)
        if answer.status == 404:
            raise self._error(answer, f"namespace {'.'.join(ns)} does not exist", NotFound)
        if answer.status == 409:
            raise self._error(answer, f"namespace {'.'.join(ns)} is not empty",
                              NamespaceNotEmpty)
        if answer.status not in (200, 204):
            raise self._error(answer, what)

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        ns = to_namespace(namespace)
        doc = self._get_json(self._url("namespaces", self._ns_path(ns)),
                             f"loading namespace {'.'.join(ns)}",
                             f"namespace {'.'.join(ns)} does not exist")
        props = doc.get("properties") or {}
        return {str(k): str(v) for k, v in props.items()} if isinstance(props, dict) else {}

    def update_namespace_properties(
        self, namespace: str | Iterable[str], removals: Iterable[str] = (),
        updates: Mapping[str, str] | None = None,
    ) -> dict[str, list[str]]:
        """Remove and set namespace properties; the server's account (``removed``,
        ``updated``, ``missing``)."""
        ns = to_namespace(namespace)
        removals, updates = sorted(set(removals)), dict(updates or {})
        if set(removals) & updates.keys():
            raise ValidationError(
                f"properties both removed and updated: {sorted(set(removals) & updates.keys())}")
        what = f"updating the properties of namespace {'.'.join(ns)}"
        answer = self._request("POST", self._url("namespaces", self._ns_path(ns), "properties"),
                               what=what, body={"removals": removals, "updates": updates})
        if answer.status == 404:
            raise self._error(answer, f"namespace {'.'.join(ns)} does not exist", NotFound)
        if answer.status not in (200, 204):
            raise self._error(answer, what)
        doc = answer.json() if answer.status == 200 else None
        out: dict[str, list[str]] = {"removed": [], "updated": [], "missing": []}
        if isinstance(doc, dict):
            for key in out:
                if isinstance(doc.get(key), list):
                    out[key] = [str(k) for k in doc[key]]
        return out

    def _head_exists(self, url: str, what: str, without_head: Callable[[], bool]) -> bool:
        """HEAD ``url``: 200/204 exists, 404 does not; a server without HEAD routes (405,
        501) is asked ``without_head()`` instead."""
        answer = self._request("HEAD", url, what=what)
        if answer.status in (200, 204):
            return True
        if answer.status == 404:
            return False
        if answer.status in (405, 501):
            return without_head()
        raise self._error(answer, what)

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        ns = to_namespace(namespace)
        return self._head_exists(self._url("namespaces", self._ns_path(ns)),
                                 f"looking for namespace {'.'.join(ns)}",
                                 lambda: super(RestCatalog, self).namespace_exists(ns))

    # -- tables ----------------------------------------------------------------------------

    def list_tables(self, namespace: str | Iterable[str]) -> list[TableIdentifier]:
        """Tables of a namespace, sorted. A name floe cannot hold as an identifier (with
        ``/`` or ``..``, say) is left out with a warning."""
        ns = to_namespace(namespace)
        name = ".".join(ns)
        out: list[TableIdentifier] = []
        for item in self._pages(
                lambda q: self._url("namespaces", self._ns_path(ns), "tables", query=q),
                "identifiers", f"listing the tables of namespace {name}",
                f"namespace {name} does not exist"):
            try:
                out.append(TableIdentifier(tuple(item["namespace"]), item["name"]))
            except (KeyError, TypeError, ValidationError) as e:
                log.warning("catalog %s: skipping table %r of namespace %s: %s",
                            self.name, item, name, e)
        return sorted(out, key=lambda i: (i.namespace, i.name))

    def _loaded_from(self, ident: TableIdentifier, doc: Mapping[str, Any], what: str
                     ) -> _Loaded:
        location = doc.get("metadata-location")
        raw = doc.get("metadata")
        if not isinstance(location, str) or not isinstance(raw, dict):
            raise FloeError(f"catalog {self.name!r}: {what}: the answer has no "
                            "metadata-location and metadata")
        metadata = metadata_from_json(raw, location)
        self._loaded.put(location, metadata)
        config = doc.get("config") or {}
        storage = {str(k): str(v) for k, v in config.items()} if isinstance(config, dict) \
            else {}
        credentials = doc.get("storage-credentials")
        if not credentials and self._endpoints is not None \
                and CREDENTIALS_ENDPOINT in self._endpoints:
            credentials = self._get_json(self._url(*self._table_path(ident), "credentials"),
                                         f"loading storage credentials of table {ident}",
                                         f"table {ident} does not exist"
                                         ).get("storage-credentials")
        storage.update(self._credentials_for(metadata.location, credentials))
        return _Loaded(location, metadata, self._table_io(storage))

    @staticmethod
    def _credentials_for(location: str, credentials: Any) -> dict[str, str]:
        """The config of the storage credential with the longest prefix of ``location``."""
        best: dict[str, Any] | None = None
        for cred in credentials if isinstance(credentials, list) else ():
            if isinstance(cred, dict) and isinstance(cred.get("prefix"), str) \
                    and isinstance(cred.get("config"), dict) \
                    and location.startswith(cred["prefix"]) \
                    and (best is None or len(cred["prefix"]) > len(best["prefix"])):
                best = cred
        return {} if best is None else {str(k): str(v) for k, v in best["config"].items()}

    def _table_io(self, storage: Mapping[str, str]) -> FileIO:
        key = tuple(sorted(storage.items()))
        return self._ios.get_or_load(key, lambda: self.io.with_properties(storage))

    def _answer(self, ident: TableIdentifier, doc: Mapping[str, Any], what: str
                ) -> TableAnswer:
        config = doc.get("config")
        credentials = doc.get("storage-credentials")
        if doc.get("metadata-location") is None and isinstance(doc.get("metadata"), dict):
            metadata = metadata_from_json(doc["metadata"], f"{ident} (staged)")
            location = None
        else:
            loaded = self._loaded_from(ident, doc, what)
            location, metadata = loaded.location, loaded.metadata
        return TableAnswer(
            location, metadata,
            {str(k): str(v) for k, v in config.items()} if isinstance(config, dict) else {},
            [c for c in credentials if isinstance(c, dict)]
            if isinstance(credentials, list) else [])

    def load_table_answer(self, ident: TableIdentifier | str) -> TableAnswer:
        """``loadTable``'s answer: the table's metadata and what the catalog vends with it."""
        ident = TableIdentifier.of(ident)
        what = f"loading table {ident}"
        doc = self._get_json(self._url(*self._table_path(ident), query={"snapshots": "all"}),
                             what, f"table {ident} does not exist")
        return self._answer(ident, doc, what)

    def create_table_request(self, namespace: str | Iterable[str],
                             request: Mapping[str, Any]) -> TableAnswer:
        """Send a ``CreateTableRequest`` as it is (a server passing on its client's request;
        ``stage-create`` included). TableAlreadyExists when the name is taken, asked first
        (see :meth:`create_table`)."""
        ident = TableIdentifier(to_namespace(namespace), str(request.get("name")))
        if self.table_exists(ident):
            raise TableAlreadyExists(f"catalog {self.name!r}: table {ident} already exists")
        what = f"creating table {ident}"
        return self._answer(ident, self._post_create(ident, dict(request), what), what)

    def commit_table_request(self, ident: TableIdentifier | str,
                             request: Mapping[str, Any]) -> TableAnswer:
        """Send a ``CommitTableRequest`` as it is (requirements and updates as a client sent
        them to a server passing them on): the catalog checks the requirements. Errors as
        :meth:`commit_updates`."""
        ident = TableIdentifier.of(ident)
        what = f"committing to table {ident}"
        answer = self._send_commit(self._url(*self._table_path(ident)), request, what,
                                   f"table {ident}")
        if answer.status != 200:
            raise self._commit_error(answer, f"table {ident}")
        return self._answer(ident, self._object(answer, what), what)

    def commit_transaction_request(self, request: Mapping[str, Any]) -> None:
        """Send a ``CommitTransactionRequest`` as it is to ``transactions/commit`` (only
        when :meth:`supports` it): every table or none. Errors as :meth:`commit_updates`."""
        tables = len(request.get("table-changes") or ())
        where = f"a transaction of {tables} table{'s' if tables != 1 else ''}"
        answer = self._send_commit(self._url("transactions", "commit"), request,
                                   f"committing {where}", where)
        if answer.status not in (200, 204):
            raise self._commit_error(answer, where)

    def _send_commit(self, url: str, body: Mapping[str, Any], what: str, where: str
                     ) -> _Response:
        try:
            return self._request("POST", url, what=what, body=body)
        except OutcomeUnknown as e:
            raise CommitStateUnknown(f"{where}: {e}; refresh the table to see whether the "
                                     "commit happened") from None

    def _commit_error(self, answer: _Response, where: str) -> FloeError:
        """A commit's refusal or failure: 409 CommitConflict, 404 NotFound, 5xx
        CommitStateUnknown (it may have happened), 401/403 CatalogUnavailable, any other
        CommitRefused with the catalog's status and error type."""
        if answer.status == 409:
            return self._error(answer, f"{where}: the commit conflicts", CommitConflict)
        if answer.status == 404:
            return self._error(answer, f"{where}: not found", NotFound)
        if answer.status >= 500:
            return self._error(answer, f"{where}: the catalog failed while committing, so the "
                               "commit may or may not have happened; refresh the table to "
                               "see", CommitStateUnknown)
        if answer.status in (401, 403):
            return self._error(answer, f"{where}: the catalog refused the commit")
        doc = answer.json()
        err = doc.get("error") if isinstance(doc, dict) else None
        kind = err.get("type") if isinstance(err, dict) else None
        status = answer.status if 400 <= answer.status < 500 else 400
        return self._error(
            answer, f"{where}: the catalog refused the commit",
            lambda m: CommitRefused(m, status, kind if isinstance(kind, str) and kind
                                    else "BadRequestException"))

    def _load(self, ident: TableIdentifier) -> _Loaded:
        doc = self._get_json(self._url(*self._table_path(ident), query={"snapshots": "all"}),
                             f"loading table {ident}",
                             f"table {ident} does not exist")
        return self._loaded_from(ident, doc, f"loading table {ident}")

    def _table(self, ident: TableIdentifier, loaded: _Loaded) -> Table:
        from floe.table import Table

        return Table(self, ident, loaded.metadata, loaded.location, loaded.io)

    def load_table(self, ident: TableIdentifier | str) -> Table:
        ident = TableIdentifier.of(ident)
        return self._table(ident, self._load(ident))

    def metadata_location(self, ident: TableIdentifier | str) -> str:
        return self._load(TableIdentifier.of(ident)).location

    def read_metadata(self, location: str) -> TableMetadata:
        """The metadata the catalog just answered for ``location`` (a table load reads it
        right after asking where it is), else the file itself."""
        self.io.guard(location)
        found = self._loaded.get(location)
        return found if found is not None else read_metadata(self.io, location)

    def table_exists(self, ident: TableIdentifier | str) -> bool:
        ident = TableIdentifier.of(ident)
        return self._head_exists(self._url(*self._table_path(ident)),
                                 f"looking for table {ident}",
                                 lambda: super(RestCatalog, self).table_exists(ident))

    def default_table_location(self, ident: TableIdentifier) -> str:
        """The namespace's ``location`` property + the table name (the server decides where
        a table goes when it is created without a location)."""
        ns_location = self.load_namespace_properties(ident.namespace).get("location")
        if not ns_location:
            raise UnsupportedOperation(f"catalog {self.name!r}: the REST catalog chooses the "
                                       f"location of table {ident}")
        return f"{ns_location.rstrip('/')}/{ident.name}"

    def create_table(
        self,
        ident: TableIdentifier | str,
        schema: Schema,
        spec: PartitionSpec = UNPARTITIONED,
        sort_order: SortOrder = UNSORTED_SORT_ORDER,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        format_version: int = 2,
    ) -> Table:
        """``CreateTableRequest``: the schema with fresh field ids, the spec and sort order
        bound to them, the properties (``format-version`` among them) and the location if
        given; the server writes the first metadata file. TableAlreadyExists when the name
        is taken, also asked first as for every catalog (SeaweedFS 4.48 answers a create of
        an existing name with the existing table)."""
        ident = TableIdentifier.of(ident)
        if self.table_exists(ident):
            raise TableAlreadyExists(f"catalog {self.name!r}: table {ident} already exists")
        fresh = new_table_metadata(schema, spec, sort_order, location or "", properties,
                                   format_version)
        body: dict[str, Any] = {
            "name": ident.name, "schema": fresh.schema().to_json(),
            "partition-spec": fresh.spec().to_json(),
            "write-order": fresh.sort_order().to_json(), "stage-create": False,
            "properties": {**dict(properties or {}),
                           "format-version": str(fresh.format_version)},
        }
        if location:
            body["location"] = location.rstrip("/")
        what = f"creating table {ident}"
        return self._table(ident, self._loaded_from(ident, self._post_create(ident, body, what),
                                                    what))

    def _post_create(self, ident: TableIdentifier, body: Mapping[str, Any], what: str
                     ) -> dict[str, Any]:
        """POST a CreateTableRequest; the LoadTableResult (409: TableAlreadyExists, 404:
        NotFound naming the namespace)."""
        answer = self._request("POST", self._url("namespaces", self._ns_path(ident.namespace),
                                                 "tables"), what=what, body=dict(body))
        if answer.status == 409:
            raise self._error(answer, f"table {ident} already exists", TableAlreadyExists)
        if answer.status == 404:
            raise self._error(answer, f"{what}: namespace {'.'.join(ident.namespace)} does "
                              "not exist", NotFound)
        if answer.status != 200:
            raise self._error(answer, what)
        return self._object(answer, what)

    def _object(self, answer: _Response, what: str) -> dict[str, Any]:
        doc = answer.json()
        if not isinstance(doc, dict):
            raise FloeError(f"catalog {self.name!r}: {what}: the answer is not a JSON object")
        return doc

    def register_table(self, ident: TableIdentifier | str, metadata_location: str) -> Table:
        """``RegisterTableRequest`` (``overwrite`` false): TableAlreadyExists when the name
        is taken."""
        ident = TableIdentifier.of(ident)
        what = f"registering table {ident}"
        answer = self._request(
            "POST", self._url("namespaces", self._ns_path(ident.namespace), "register"),
            what=what, body={"name": ident.name, "metadata-location": metadata_location,
                             "overwrite": False})
        if answer.status == 409:
            raise self._error(answer, f"table {ident} already exists", TableAlreadyExists)
        if answer.status == 404:
            raise self._error(answer, what, NotFound)
        if answer.status != 200:
            raise self._error(answer, what)
        return self._table(ident, self._loaded_from(ident, self._object(answer, what), what))

    def rename_table(self, src: TableIdentifier | str, dst: TableIdentifier | str) -> Table:
        src, dst = TableIdentifier.of(src), TableIdentifier.of(dst)
        what = f"renaming table {src} to {dst}"
        answer = self._request("POST", self._url("tables", "rename"), what=what, body={
            "source": {"namespace": list(src.namespace), "name": src.name},
            "destination": {"namespace": list(dst.namespace), "name": dst.name}})
        if answer.status == 404:
            raise self._error(answer, what, NotFound)
        if answer.status == 409:
            raise self._error(answer, f"{what}: table {dst} already exists",
                              TableAlreadyExists)
        if answer.status not in (200, 204):
            raise self._error(answer, what)
        return self.load_table(dst)

    def drop_table(self, ident: TableIdentifier | str, purge: bool = False) -> None:
        """Drop the table; with ``purge`` the server is asked to delete its files too
        (``purgeRequested``)."""
        ident = TableIdentifier.of(ident)
        what = f"dropping table {ident}"
        answer = self._request(
            "DELETE", self._url(*self._table_path(ident),
                                query={"purgeRequested": "true" if purge else "false"}),
            what=what)
        if answer.status == 404:
            raise self._error(answer, f"table {ident} does not exist", NotFound)
        if answer.status not in (200, 204):
            raise self._error(answer, what)

    # -- server-side scan planning ----------------------------------------------------------

    def plan_on_server(self, ident: TableIdentifier | str, row_filter: Any = None,
                       snapshot_id: int | None = None, case_sensitive: bool = True
                       ) -> ScanPlan:
        """The scan planned by the catalog (``planTableScan``, Iceberg 1.11), plan tasks
        followed with ``fetchScanTasks``: a :class:`~floe.scan.ScanPlan` of floe
        ``FileScanTask`` s to read with :func:`floe.scan.readers.read_plan`. ``row_filter``
        is a filter string or an expression. A server that does not list the endpoint in
        ``/v1/config`` is UnsupportedOperation; an answer still ``submitted`` is polled with
        ``fetchPlanningResult`` (up to :data:`PLAN_POLLS` times)."""
        from floe.expressions.json import expression_to_json
        from floe.scan.filters import ScanFilter
        from floe.scan.planning import ScanPlan, TaskList, select_snapshot
        from floe.scan.tasks_json import scan_tasks_from_json

        ident = TableIdentifier.of(ident)
        self._ensure_config()
        if self._endpoints is not None and PLAN_ENDPOINT not in self._endpoints:
            raise UnsupportedOperation(f"catalog {self.name!r} does not plan scans on the "
                                       "server (its /v1/config does not list planTableScan)")
        table = self.load_table(ident)
        # the snapshot, schema and bound filter a local plan of the same scan would have
        sel = select_snapshot(table.metadata, snapshot_id)
        scan_filter = ScanFilter(table.metadata, sel.schema, row_filter, case_sensitive)
        expr, bound = scan_filter.expression, scan_filter.bound
        body: dict[str, Any] = {"case-sensitive": case_sensitive}
        if snapshot_id is not None:
            body["snapshot-id"] = snapshot_id
        if expr is not None:
            body["filter"] = expression_to_json(expr)
        what = f"planning a scan of table {ident} on the server"
        path = self._table_path(ident)
        doc = self._planning_answer(self._request("POST", self._url(*path, "plan"), what=what,
                                                  body=body), what, ident)
        polls = 0
        while doc.get("status") == "submitted":
            polls += 1
            if polls > PLAN_POLLS or not doc.get("plan-id"):
                raise FloeError(f"catalog {self.name!r}: {what}: still submitted after "
                                f"{PLAN_POLLS} polls")
            time.sleep(min(0.05 * 2 ** polls, 2.0))
            plan_id = urllib.parse.quote(str(doc["plan-id"]), safe="")
            doc = self._planning_answer(self._request(
                "GET", self._url(*path, "plan", plan_id), what=what), what, ident)
        if doc.get("status") != "completed":
            raise FloeError(f"catalog {self.name!r}: {what}: planning ended "
                            f"{str(doc.get('status'))[:40]!r}")
        tasks = []
        pages, seen = [doc], set()
        while pages:
            page = pages.pop(0)
            try:
                tasks.extend(scan_tasks_from_json(table.metadata, page, sel.schema,
                                                  case_sensitive))
            except ValidationError as e:
                raise FloeError(f"catalog {self.name!r}: {what}: {e}") from None
            for token in page.get("plan-tasks") or []:
                if token in seen:
                    raise FloeError(f"catalog {self.name!r}: {what}: the server repeated "
                                    f"plan task {str(token)[:40]!r}")
                seen.add(token)
                pages.append(self._planning_answer(self._request(
                    "POST", self._url(*path, "tasks"), what=what, body={"plan-task": token}),
                    what, ident))
        out = ScanPlan(table.metadata, sel.snapshot, sel.schema, expr, bound,
                       tasks=TaskList(tasks), case_sensitive=case_sensitive)
        out.funnel.tasks = len(tasks)
        return out

    def _planning_answer(self, answer: _Response, what: str, ident: TableIdentifier
                         ) -> dict[str, Any]:
        if answer.status == 404:
            raise self._error(answer, f"table {ident} does not exist", NotFound)
        if answer.status == 400:
            raise self._error(answer, what, ValidationError)
        if answer.status != 200:
            raise self._error(answer, what)
        return self._object(answer, what)

    # -- commits ---------------------------------------------------------------------------

    def _commit(self, ident: TableIdentifier, base_location: str | None,
                new_metadata: TableMetadata) -> str:
        raise UnsupportedOperation(
            f"catalog {self.name!r}: a REST catalog commits updates (Catalog.commit_updates), "
            "not whole metadata files")

    def commit_updates(
        self,
        ident: TableIdentifier,
        base_location: str,
        base: TableMetadata,
        requirements: Sequence[TableRequirement],
        updates: Sequence[TableUpdate],
    ) -> tuple[str, TableMetadata]:
        """``POST .../tables/<t>`` with the requirements (the transaction's, plus what the
        updates rely on: :func:`floe.table.updates.requirements_for`) and the updates; the
        server applies them to its current metadata and writes the next metadata file."""
        from floe.table.updates import requirements_for
        from floe.table.updates_json import commit_request_to_json

        wanted = list(requirements)
        wanted += [r for r in requirements_for(base, updates) if r not in wanted]
        body = commit_request_to_json(wanted, updates, (ident.namespace, ident.name))
        what = f"committing to table {ident}"
        answer = self._send_commit(self._url(*self._table_path(ident)), body, what,
                                   f"table {ident}")
        if answer.status != 200:
            raise self._commit_error(answer, f"table {ident}")
        loaded = self._loaded_from(ident, self._object(answer, what), what)
        return loaded.location, loaded.metadata
