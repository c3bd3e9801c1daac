"""The property names and defaults of a REST catalog (``type = "rest"``), apart from the client
(:mod:`floe.catalog.rest`), whose HTTP and TLS modules reading a catalog configuration
(:mod:`floe.catalog.config`) does not need."""

from __future__ import annotations

URI = "uri"
WAREHOUSE = "warehouse"
PREFIX = "prefix"
CREDENTIAL = "credential"
TOKEN = "token"
OAUTH2_SERVER_URI = "oauth2-server-uri"
SCOPE = "scope"
DEFAULT_SCOPE = "catalog"
AUDIENCE = "audience"
RESOURCE = "resource"
HEADER_PREFIX = "header."
SIGV4 = "rest.sigv4-enabled"
SIGV4_REGION = "rest.signing-region"
SIGV4_SERVICE = "rest.signing-name"
DEFAULT_SIGV4_SERVICE = "execute-api"
NAMESPACE_SEPARATOR = "namespace-separator"
DEFAULT_NAMESPACE_SEPARATOR = "%1F"
PAGE_SIZE = "rest-page-size"
CONNECT_TIMEOUT = "rest.client.connection-timeout-ms"
SOCKET_TIMEOUT = "rest.client.socket-timeout-ms"
MAX_RETRIES = "rest.client.max-retries"
DEFAULT_CONNECT_TIMEOUT_MS = 10_000
DEFAULT_SOCKET_TIMEOUT_MS = 60_000
DEFAULT_MAX_RETRIES = 4
ACCESS_DELEGATION = "X-Iceberg-Access-Delegation"
DEFAULT_ACCESS_DELEGATION = "vended-credentials"
#: The options any catalog type passes to its FileIO (PyIceberg's FileIO property names).
STORAGE_PREFIXES = ("s3.", "gcs.", "adls.")
#: What ``GET /v1/config``'s ``endpoints`` says when the server vends credentials per table.
CREDENTIALS_ENDPOINT = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"
#: Server-side scan planning (Iceberg 1.11) and how often a "submitted" plan is polled.
PLAN_ENDPOINT = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"
PLAN_POLLS = 20
#: What ``GET /v1/config``'s ``endpoints`` says when the server commits several tables at once.
TRANSACTIONS_ENDPOINT = "POST /v1/{prefix}/transactions/commit"
#: Every property name a ``type = "rest"`` catalog takes (besides ``header.*`` and the
#: storage properties).
OPTIONS = frozenset({
    URI, WAREHOUSE, PREFIX, CREDENTIAL, TOKEN, OAUTH2_SERVER_URI, SCOPE, AUDIENCE, RESOURCE,
    SIGV4, SIGV4_REGION, SIGV4_SERVICE, NAMESPACE_SEPARATOR, PAGE_SIZE, CONNECT_TIMEOUT,
    SOCKET_TIMEOUT, MAX_RETRIES, "client.access-key-id", "client.secret-access-key",
    "client.session-token", "client.region",
})
OPTION_PREFIXES = (HEADER_PREFIX,)
