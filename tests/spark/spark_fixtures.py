"""The one PySpark session of a pytest session, shared by tests/spark and the interop module
that reads through the floe source (import the fixture from here, never build another).

``local[2]`` with small shuffles and no UI: the machine has two cores and other JVMs (the
oracle's) run beside it. The session lives until the interpreter exits.
"""

from __future__ import annotations

import atexit
import logging
from typing import Any

import pytest

_SESSION: Any = None

CONFIG = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
    # a failed task fails its job at once (local mode retries nothing anyway)
    "spark.task.maxFailures": "1",
}


def spark_session() -> Any:
    """The shared session (started on first use)."""
    global _SESSION
    if _SESSION is None:
        # py4j logs while the interpreter shuts down, after pytest closed its streams
        logging.getLogger("py4j").setLevel(logging.WARNING)
        from floe.spark import session

        _SESSION = session("local[2]", app_name="floe-tests", config=CONFIG)
        atexit.register(_SESSION.stop)
    return _SESSION


@pytest.fixture(scope="session")
def spark() -> Any:
    """A SparkSession with the floe source registered (floe.spark.session)."""
    return spark_session()
