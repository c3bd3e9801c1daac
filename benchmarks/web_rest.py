"""Explorer: a table's overview on a REST catalog with its files in a bucket, beside the same
table in a local file-system catalog (issue 20: warm p95 ≤ 150 ms).

Starts SeaweedFS (S3 + its Iceberg REST catalog, from the tests' harness, on loopback), makes
the same table in both catalogs (``--snapshots`` appends of ``--files`` files each, partitioned),
then times the overview page through Django's test client (the whole Django stack, no socket):

- **warm**: ``--warm-runs`` requests after one warm-up, p50 / p95;
- **first**: the first request after the explorer's and floe's caches are cleared (the
  catalog object, its OAuth2 token and its connections are kept, as in a running server).

Then the same requests once more through a catalog entry that reaches the REST catalog and S3
through counting proxies (tests/faulty_proxy.py, no faults): the requests each got per
overview, warm and first, and the bytes they answered.

Usage: ``python benchmarks/web_rest.py [--snapshots 100] [--files 4] [--warm-runs 50]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

WARM_TARGET_MS = 150.0
NAMESPACE = ("bench", "rest")  # nested, as REST catalogs have them
TABLE = "events"


def _pct(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    k = max(0, min(len(ordered) - 1, int(round(p / 100 * len(ordered) + 0.5)) - 1))
    return ordered[k]


def _rows(first: int, n: int, parts: int) -> Any:
    import pyarrow as pa

    return pa.table({"id": pa.array(range(first, first + n), pa.int64()),
                     "cat": [f"c{i % parts}" for i in range(first, first + n)],
                     "v": pa.array([float(i) for i in range(first, first + n)])})


def _fill(catalog: Any, snapshots: int, files: int) -> None:
    from floe.partitioning import parse_partition_by
    from floe.schema import Schema
    from floe.types import DOUBLE, LONG, STRING, NestedField

    schema = Schema(NestedField(1, "id", LONG, required=True), NestedField(2, "cat", STRING),
                    NestedField(3, "v", DOUBLE))
    catalog.create_namespace(NAMESPACE)
    table = catalog.create_table(".".join((*NAMESPACE, TABLE)), schema,
                                 parse_partition_by("cat", schema))
    for k in range(snapshots):
        table.append(_rows(k * 100, 100, files))


def _toml(name: str, options: dict[str, str]) -> str:
    import json

    return f"[catalogs.{name}]\ntype = \"rest\"\n" + "".join(
        f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in options.items())


def _get(client: Any, url: str) -> float:
    t0 = time.perf_counter()
    response = client.get(url)
    _ = response.content
    ms = (time.perf_counter() - t0) * 1000
    if response.status_code != 200:
        raise SystemExit(f"GET {url} answered {response.status_code}: "
                         f"{response.content[:300]!r}")
    return ms


def _clear() -> None:
    from explorer.cache import clear

    clear()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--snapshots", type=int, default=100)
    p.add_argument("--files", type=int, default=4, help="data files per append (partitions)")
    p.add_argument("--warm-runs", type=int, default=50)
    p.add_argument("--first-runs", type=int, default=5)
    args = p.parse_args(argv)

    from tests.faulty_proxy import FaultyProxy
    from tests.object_store import SeaweedFS

    with tempfile.TemporaryDirectory() as tmp:
        server = SeaweedFS.create(Path(tmp) / "sw", Path(tmp))
        server.start()
        try:
            with FaultyProxy(server.catalog_uri) as rest_proxy, \
                    FaultyProxy(server.endpoint) as s3_proxy:
                return _run(args, server, Path(tmp), rest_proxy, s3_proxy)
        finally:
            server.stop()


def _run(args: argparse.Namespace, server: Any, tmp: Path, rest_proxy: Any,
         s3_proxy: Any) -> int:
    # The catalogs: the REST catalog as a user configures it (OAuth2 client credentials, the
    # S3 keys; the server's loadTable config gives the endpoint), and the same catalog
    # reached through the counting proxies (the vended-credentials header keeps the server's
    # endpoint out of the config, so the proxy's holds).
    direct = {"uri": server.catalog_uri, "warehouse": server.warehouse,
              "credential": f"{server.access_key}:{server.secret_key}",
              "oauth2-server-uri": server.token_url, "header.X-Iceberg-Access-Delegation": "",
              "s3.access-key-id": server.access_key, "s3.secret-access-key": server.secret_key}
    counted = {**direct, "uri": rest_proxy.url, "oauth2-server-uri": f"{rest_proxy.url}"
               "/v1/oauth/tokens", "header.X-Iceberg-Access-Delegation": "vended-credentials",
               "s3.endpoint": s3_proxy.url, "s3.region": server.region,
               "s3.path-style-access": "true"}
    warehouse = tmp / "warehouse"
    warehouse.mkdir()
    catalogs = tmp / "catalogs.toml"
    catalogs.write_text(_toml("lake", direct) + _toml("counted", counted))
    os.environ.update(FLOE_WAREHOUSE=str(warehouse), FLOE_CATALOGS=str(catalogs),
                      FLOE_VAR_DIR=str(tmp / "var"), FLOE_ALLOW_ANONYMOUS="true",
                      FLOE_MANIFEST_CACHE="off", FLOE_EXPENSIVE_READS_PER_MINUTE="0",
                      DJANGO_SETTINGS_MODULE="explorer.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from floe.catalog.filesystem import FileSystemCatalog
    from floe.catalog.rest import RestCatalog

    call_command("migrate", interactive=False, verbosity=0)
    t0 = time.perf_counter()
    with RestCatalog("setup", direct) as rest:
        _fill(rest, args.snapshots, args.files)
    _fill(FileSystemCatalog("local", str(warehouse)), args.snapshots, args.files)
    print(f"table {'.'.join(NAMESPACE)}.{TABLE}: {args.snapshots} appends of {args.files} "
          f"files each, in both catalogs ({time.perf_counter() - t0:.1f} s); S3 and the REST "
          "catalog = SeaweedFS on loopback")

    client = Client(HTTP_HOST="localhost")
    ns = ".".join(NAMESPACE)

    def url(catalog: str) -> str:
        return f"/catalogs/{catalog}/namespaces/{ns}/tables/{TABLE}/"

    print(f"{'overview':<30} {'first p50':>9} {'first p95':>9} {'warm p50':>9} "
          f"{'warm p95':>9}  verdict (warm p95 ≤ {WARM_TARGET_MS:.0f} ms)")
    failures = 0
    for name, catalog in (("local file-system catalog", "local"),
                          ("REST catalog + S3", "lake")):
        _get(client, url(catalog))  # the catalog object, its token and connections
        first = []
        for _ in range(args.first_runs):
            _clear()
            first.append(_get(client, url(catalog)))
        warm = [_get(client, url(catalog)) for _ in range(args.warm_runs)]
        ok = _pct(warm, 95) <= WARM_TARGET_MS
        failures += not ok
        print(f"{name:<30} {_pct(first, 50):9.1f} {_pct(first, 95):9.1f} "
              f"{_pct(warm, 50):9.1f} {_pct(warm, 95):9.1f}  {'ok' if ok else 'OVER'}",
              flush=True)

    # requests per overview, through the counting proxies
    def counted_requests(n: int, clear: bool) -> tuple[Counter[str], Counter[str], int]:
        rest_before, s3_before = len(rest_proxy.requests()), len(s3_proxy.requests())
        bytes_before = rest_proxy.state.bytes_answered + s3_proxy.state.bytes_answered
        for _ in range(n):
            if clear:
                _clear()
            _get(client, url("counted"))
        rest = Counter(f"{m} {_route(p)}" for m, p, _ in rest_proxy.requests()[rest_before:])
        s3 = Counter(m for m, _, _ in s3_proxy.requests()[s3_before:])
        sent = rest_proxy.state.bytes_answered + s3_proxy.state.bytes_answered - bytes_before
        return rest, s3, sent

    _get(client, url("counted"))
    runs = 5
    for what, clear in (("first (caches cleared)", True), ("warm", False)):
        rest, s3, sent = counted_requests(runs, clear)
        print(f"requests per overview, {what}: REST catalog "
              f"{sum(rest.values()) / runs:g} ({_per(rest, runs)}), S3 "
              f"{sum(s3.values()) / runs:g} ({_per(s3, runs) or 'none'}), "
              f"{sent / runs / 1024:.1f} KiB answered")
    return 1 if failures else 0


def _route(path: str) -> str:
    """A REST path with the names left out (``/v1/{prefix}/namespaces/{ns}/tables/{t}``)."""
    parts = path.split("?", 1)[0].split("/")
    if "tables" in parts:
        return "loadTable"
    if "oauth" in parts:
        return "token"
    if parts[-1] == "config":
        return "config"
    return "/".join(parts[:4])


def _per(counts: Counter[str], runs: int) -> str:
    return ", ".join(f"{k} {v / runs:g}" for k, v in sorted(counts.items()))


if __name__ == "__main__":
    raise SystemExit(main())
