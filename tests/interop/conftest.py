"""The interop harness: one oracle helper process (Spark + Iceberg Java, PyIceberg, DuckDB in the
oracle's own venv) per pytest session, and the Spark-written tables the interop tests read.

The oracle is found through ``FLOE_ORACLE_PY`` / ``FLOE_ORACLE_DIR`` (``scripts/test.sh``
exports them), else at ``../shared/tools/iceberg-oracle`` beside the repository, whose
``setup`` prints the python.  Interop tests skip only when ``FLOE_REQUIRE_ORACLE`` is unset and
no oracle can be found; with ``FLOE_REQUIRE_ORACLE=1`` a missing or broken oracle fails them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import http_client_jar
import pytest
from oracle_client import HERE, REPO, OracleClient
from spark_tables import SparkTable
from spark_tables import build as build_spark_tables


def _oracle_location() -> tuple[str | None, Path | None, str]:
    """(python, oracle dir, why-not) for the oracle, running its ``setup`` when needed."""
    env_dir = os.environ.get("FLOE_ORACLE_DIR")
    oracle_dir = Path(env_dir) if env_dir else REPO.parent / "shared" / "tools" / "iceberg-oracle"
    if not (oracle_dir / "oracle.py").is_file():
        return None, None, f"no iceberg-oracle at {oracle_dir}"
    python = os.environ.get("FLOE_ORACLE_PY")
    if not python:
        setup = oracle_dir / "setup"
        run = subprocess.run([str(setup)], capture_output=True, text=True, timeout=900)
        if run.returncode != 0:
            return None, oracle_dir, f"iceberg-oracle setup failed: {run.stdout}{run.stderr}"
        python = run.stdout.strip().splitlines()[-1]
    return python, oracle_dir, ""


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The oracle helper process, started once per session (catalog ``oracle``)."""
    required = os.environ.get("FLOE_REQUIRE_ORACLE") == "1"
    python, oracle_dir, why = _oracle_location()
    if python is None or oracle_dir is None:
        if required or oracle_dir is not None:
            pytest.fail(f"the interop tests need the oracle: {why}", pytrace=False)
        pytest.skip(why)
    artifacts = REPO / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    # one log per session: other pytest sessions may be running beside this one
    log = artifacts / f"oracle-server-{os.getpid()}.log"
    warehouse = tmp_path_factory.mktemp("oracle-warehouse")
    t0 = time.monotonic()
    try:
        client = OracleClient(python, oracle_dir, warehouse, log, _rest_http_jars(artifacts))
    except Exception as ex:  # noqa: BLE001 - any failure to start must fail loudly
        pytest.fail(f"could not start the oracle server: {ex}", pytrace=False)
    sys.stderr.write(f"\n[interop] oracle server up in {time.monotonic() - t0:.1f} s\n")
    yield client
    client.close()
    total = sum(t for _, t in client.timings)
    sys.stderr.write(
        f"\n[interop] {len(client.timings)} oracle requests, {total:.1f} s inside the oracle\n"
    )


def _rest_http_jars(artifacts: Path) -> tuple[Path, ...]:
    """The HttpClient 5 jar Iceberg Java's REST client needs (:mod:`http_client_jar`), when
    its sources are installed; without it the REST-catalog tests say which class is missing."""
    if http_client_jar.missing_sources():
        return ()
    return (http_client_jar.build(artifacts / "jars"),)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.interop)
    # the session's own checks run after every other test (items is the whole session)
    last = [item for item in items if item.get_closest_marker("last_in_session")]
    items[:] = [item for item in items if item not in last] + last


@pytest.fixture(scope="session")
def spark_tables(oracle: Any) -> dict[str, SparkTable]:
    """Every Spark-written table of :mod:`spark_tables`, built once per session."""
    t0 = time.monotonic()
    tables = build_spark_tables(oracle)
    sys.stderr.write(f"\n[interop] Spark tables built in {time.monotonic() - t0:.1f} s\n")
    return tables


# The metadata tables Spark answers for a whole table in one request.
SPARK_METADATA_TABLES = (
    "snapshots",
    "refs",
    "metadata_log_entries",
    "all_manifests",
    "all_entries",
)


@pytest.fixture(scope="session")
def spark_metadata(oracle: Any, spark_tables: dict[str, SparkTable]) -> Any:
    """``spark_metadata(name)`` -> ``{metadata table: rows}`` for one table (cached)."""
    cache: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def get(name: str) -> dict[str, list[dict[str, Any]]]:
        if name not in cache:
            ident = spark_tables[name].ident
            rows = oracle.sql(
                [f"SELECT * FROM {ident}.{m}" for m in SPARK_METADATA_TABLES], all=True
            )
            cache[name] = dict(zip(SPARK_METADATA_TABLES, rows, strict=True))
        return cache[name]

    return get
