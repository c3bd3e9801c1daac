"""A sample of the tables the table-changes state machine (tests/floe/test_table_changes_model.py)
leaves behind — random appends, deletes in both modes, evolution, rollbacks, branch commits,
fast-forwards and cherry-picks — read by Spark + Iceberg Java: the same rows as floe's model,
on main and on the branch."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "floe"))
from test_table_changes_model import BRANCH, TableChanges  # noqa: E402

from floe.catalog.filesystem import FileSystemCatalog  # noqa: E402

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def model_tables(oracle: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("model-tables")
    TableChanges.warehouse = str(root)
    TableChanges.finished = []
    try:
        run_state_machine_as_test(TableChanges, settings=settings(
            max_examples=30, stateful_step_count=20, deadline=None, database=None,
            derandomize=True,  # the same sample every run: the count below cannot flake
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    finally:
        TableChanges.warehouse = None
    oracle.add_catalog("model", root)
    return root, list(TableChanges.finished)


def test_spark_reads_what_the_model_expects(oracle: Any, model_tables: Any) -> None:
    root, finished = model_tables
    catalog = FileSystemCatalog("model", str(root))
    checked = 0
    stmts, wanted = [], []
    for name, _, expected in finished:
        table = catalog.load_table(f"db.{name}")
        fields = [f.name for f in table.schema().fields]
        for branch, rows in expected.items():
            ref = "" if branch == "main" else f" VERSION AS OF '{BRANCH}'"
            stmts.append(f"SELECT * FROM model.db.{name}{ref}")
            wanted.append((name, branch, fields, rows))
    assert stmts, "the state machine left no table with a snapshot"
    results = oracle.sql(stmts, all=True)
    for (name, branch, fields, rows), got in zip(wanted, results, strict=True):
        spark = Counter(tuple(r[f] for f in fields) for r in got)
        assert spark == Counter(tuple(r) for r in rows), (name, branch)
        checked += 1
    assert checked >= 4
