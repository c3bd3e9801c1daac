"""A table's whole life through the served catalog with PyIceberg 0.12's ``RestCatalog``:
partition evolution, branches and tags through ``manage_snapshots``, a write to a branch,
rollback, snapshot expiry; the same state seen by PyIceberg's own ``SqlCatalog`` on the
catalog's database (the JDBC catalog's schema); a commit made beside Floe, straight to the
database, shown as external on the Audit tab while the REST ones are the users'."""

# ruff: noqa: F811 - the fixture "site" is imported from the served catalog's tests
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from explorer.audit.selectors import table_audit
from explorer.models import AuditEntry
from floe.catalog.base import TableIdentifier
from tests.api.test_iceberg_rest import Site, _ids, _pyiceberg, _rows, site  # noqa: F401

sql = pytest.importorskip("pyiceberg.catalog.sql")
from pyiceberg.transforms import IdentityTransform  # noqa: E402 - after the importorskip

pytestmark = pytest.mark.django_db(transaction=True)


@contextlib.contextmanager
def _pyiceberg_sql(site: Site) -> Iterator[Any]:
    """PyIceberg's SqlCatalog on the database floe's SQL catalog uses (not through Floe)."""
    catalog = sql.SqlCatalog(site.sql, uri=site.sql_uri,
                             warehouse=f"file://{site.sql_warehouse}")
    try:
        yield catalog
    finally:
        catalog.engine.dispose()


def test_partition_evolution_branches_rollback_and_expire_through_rest(site: Site) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    mia = _pyiceberg(site, site.sql, credential=f"mia:{site.keys['mia']}")
    table = mia.create_table("db.t", schema=_rows(0, 1).schema)
    table.append(_rows(0, 3))
    with table.update_spec() as spec:  # partition evolution
        spec.add_field("cat", IdentityTransform(), "cat")
    table.append(_rows(3, 3))
    table = mia.load_table("db.t")
    assert [f.name for f in table.spec().fields] == ["cat"] and len(table.specs()) == 2
    first, second = (s.snapshot_id for s in table.metadata.snapshots)
    table.manage_snapshots().create_branch(second, "audit").create_tag(first, "v1").commit()
    table = mia.load_table("db.t")
    table.append(_rows(100, 2), branch="audit")  # a write to a branch leaves main alone
    table = mia.load_table("db.t")
    assert _ids(table) == list(range(6))
    audit_head = table.metadata.refs["audit"].snapshot_id
    assert sorted(table.scan(snapshot_id=audit_head).to_arrow().column("id").to_pylist()) == [
        0, 1, 2, 3, 4, 5, 100, 101]
    table.manage_snapshots().rollback_to_snapshot(first).commit()
    table = mia.load_table("db.t")
    assert _ids(table) == [0, 1, 2]
    table.manage_snapshots().remove_tag("v1").commit()
    table = mia.load_table("db.t")
    # expire the second snapshot: no ref reaches it once main is rolled back and the branch
    # moved on from it
    table.maintenance.expire_snapshots().by_id(second).commit()
    table = mia.load_table("db.t")
    assert second not in {s.snapshot_id for s in table.metadata.snapshots}
    assert set(table.metadata.refs) == {"main", "audit"}
    assert sorted(table.scan(snapshot_id=audit_head).to_arrow().column("id").to_pylist()) == [
        0, 1, 2, 3, 4, 5, 100, 101]  # the branch still reads (its files are kept)

    # floe's SQL catalog and PyIceberg's SqlCatalog read the same pointer row
    with site.sql_catalog() as catalog:
        floe_table = catalog.load_table(TableIdentifier(("db",), "t"))
    with _pyiceberg_sql(site) as catalog:
        direct = catalog.load_table("db.t")
        assert direct.metadata_location == floe_table.metadata_location == (
            table.metadata_location)
        assert _ids(direct) == [0, 1, 2]
    assert floe_table.metadata.current_snapshot_id == first

    updates = [e.params["updates"] for e in AuditEntry.objects.filter(
        action="rest_commit", table="t").order_by("id")]
    assert ["add-spec", "set-default-spec"] in updates
    assert any("remove-snapshots" in u for u in updates)
    assert any("remove-snapshot-ref" in u for u in updates)
    rows = table_audit(table=floe_table)
    assert {r.source for r in rows} == {"floe"} and {r.actor for r in rows} == {"mia"}


def test_a_commit_beside_floe_is_external_and_floe_serves_it_next(site: Site) -> None:
    _pyiceberg(site, site.sql, token=site.keys["ann"]).create_namespace("db")
    mia = _pyiceberg(site, site.sql, token=site.keys["mia"])
    mia.create_table("db.t", schema=_rows(0, 1).schema).append(_rows(0, 2))
    # another engine commits straight to the catalog's database, not through Floe
    with _pyiceberg_sql(site) as catalog:
        catalog.load_table("db.t").append(pa.Table.from_pylist(
            [{"id": 7, "cat": "x"}], schema=_rows(0, 1).schema))
    served = mia.load_table("db.t")  # the served catalog reads the pointer it moved
    assert _ids(served) == [0, 1, 7]
    with site.sql_catalog() as catalog:
        rows = table_audit(table=catalog.load_table(TableIdentifier(("db",), "t")))
    by_source = [(r.source, r.actor) for r in rows]
    assert by_source.count(("floe", "mia")) == 2  # the create and the append through REST
    external = [r for r in rows if r.source == "external"]
    assert len(external) == 1 and external[0].actor is None  # no Floe user made it
    assert external[0].operation == "append"
    # and Floe's next commit through REST builds on the external one
    served.append(_rows(10, 1))
    assert _ids(mia.load_table("db.t")) == [0, 1, 7, 10]
