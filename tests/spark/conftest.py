"""PySpark tests of the floe data source, Spark compaction and the demo pipeline: every test
here is marked ``spark`` and shares one SparkSession (tests/spark/spark_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.spark.spark_fixtures import spark  # noqa: F401 - the session fixture

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.spark)
