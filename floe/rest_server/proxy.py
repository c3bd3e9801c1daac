"""The protocol served from a catalog that is itself a REST catalog (``type = "rest"``): Floe
in front of an existing catalog, adding its roles, audit and request log.

What is passed on, and how (:data:`HANDLERS` replaces these routes' handlers for such a
catalog; every other route works through :class:`~floe.catalog.rest.RestCatalog`'s methods,
which call the same endpoint upstream):

- ``loadTable``: upstream's answer, with its ``config`` over the properties the operator
  vends for the catalog (``vended_config``: by default none) and its
  ``storage-credentials`` as answered; Floe's own ``ETag`` over that (``If-None-Match`` →
  304 is answered here, after asking upstream).
- ``createTable`` (also ``stage-create``): the client's ``CreateTableRequest`` as sent.
- ``updateTable``: the client's ``CommitTableRequest`` as sent, once, after Floe has read it
  (a malformed one is 400 and is not sent). Upstream checks the requirements: its 409 is the
  client's 409 ``CommitFailedException`` (Floe does not retry it: the client does, on fresh
  metadata); another refusal is its status and error type; a 5xx answer, a timeout or a
  connection lost after sending is 500 ``CommitStateUnknownException``; a connection that
  could not be made is 503.
- ``commitTransaction``: sent to upstream's ``transactions/commit`` when its ``/v1/config``
  lists that endpoint; otherwise a transaction of one table is sent as that table's
  ``updateTable`` and one of several tables is 406, as for a file-system catalog.

Namespaces, listing, exists, drop (``purgeRequested`` passed on), rename and register go
through the catalog's methods. Not passed on: a client's ``Idempotency-Key`` (Floe answers a
repeated key itself), ``X-Iceberg-Access-Delegation`` (Floe's catalog entry says what Floe
asks for), views, scan planning and metrics reports.

Each change is a :class:`~floe.rest_server.server.Change` as for any catalog: the metadata
file before (the last entry of the new metadata's ``metadata-log``) and after, and the
current snapshots (before: read from that file, None when it cannot be).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from floe.catalog.base import TableIdentifier, UnsupportedOperation
from floe.catalog.rest import RestCatalog, TableAnswer
from floe.catalog.rest_options import TRANSACTIONS_ENDPOINT
from floe.metadata import TableMetadata
from floe.rest_server.errors import BadRequest, error_for
from floe.rest_server.server import (
    Call,
    Change,
    Response,
    _actions,
    _parse_commit,
    _snapshots_mode,
    check_name,
    transaction_changes,
)
from floe.schema import Schema
from floe.table.updates import AssertCreate, TableRequirement, TableUpdate

__all__ = ["HANDLERS"]


def _upstream(call: Call) -> RestCatalog:
    catalog = call.catalog
    assert isinstance(catalog, RestCatalog)
    return catalog


def _answer(call: Call, answer: TableAnswer, snapshots: str = "all", *, load: bool = True,
            if_none_match: str | None = None) -> Response:
    """A ``LoadTableResult`` (``load=False``: a ``CommitTableResponse``) of upstream's answer:
    upstream's config over what the operator vends (a 304 when ``if_none_match`` names its
    ETag)."""
    config = {**call.server.vended_config(call.catalog_name), **answer.config} if load \
        else None
    return call.server.table_result(
        call.catalog_name, answer.location, answer.metadata, snapshots, load=load,
        config=config, storage_credentials=answer.storage_credentials if load else (),
        if_none_match=if_none_match)


def _previous(call: Call, md: TableMetadata) -> tuple[str | None, int | None]:
    """The metadata file a commit replaced (the last ``metadata-log`` entry) and its current
    snapshot (None when the file cannot be read)."""
    if not md.metadata_log:
        return None, None
    before = md.metadata_log[-1].metadata_file
    try:
        return before, call.catalog.read_metadata(before).current_snapshot_id
    except Exception:  # the audit keeps the file; the snapshot is only a convenience
        return before, None


def _change(call: Call, action: str, ident: TableIdentifier, answer: TableAnswer,
            detail: Mapping[str, Any]) -> Change:
    before, snapshot_before = _previous(call, answer.metadata) if action == "commit" \
        else (None, None)
    return Change(action, call.catalog_name, ident.namespace, ident.name, before,
                  answer.location, snapshot_before, answer.metadata.current_snapshot_id,
                  {**dict(detail), "proxied": True})


def _unknown(call: Call, action: str, ident: TableIdentifier, exc: Exception,
             detail: Mapping[str, Any]) -> None:
    """Record a change whose outcome is unknown (the audit must keep it)."""
    error = error_for(exc, committing=True)
    if error.type == "CommitStateUnknownException":
        call.changes.append(Change(action, call.catalog_name, ident.namespace, ident.name,
                                   detail={**dict(detail), "proxied": True},
                                   outcome="unknown", error=error.message))


def _load_table(call: Call) -> Response:
    mode = _snapshots_mode(call)
    return _answer(call, _upstream(call).load_table_answer(call.ident), mode,
                   if_none_match=call.request.header("if-none-match"))


def _create_table(call: Call) -> Response:
    doc = call.json()
    ident = TableIdentifier(call.namespace, check_name(doc.get("name"), "table name"))
    if "schema" not in doc:
        raise BadRequest("createTable needs a schema")
    Schema.from_json(doc["schema"])  # a schema Floe cannot read is not passed on
    stage = doc.get("stage-create", False)
    if not isinstance(stage, bool):
        raise BadRequest("stage-create must be true or false")
    answer = _upstream(call).create_table_request(ident.namespace, doc)
    if not stage:
        call.changes.append(_change(call, "create_table", ident, answer, {}))
    return _answer(call, answer)


def _commit(call: Call, ident: TableIdentifier, request: Mapping[str, Any],
            requirements: Sequence[TableRequirement], updates: Sequence[TableUpdate],
            detail: Mapping[str, Any]) -> TableAnswer:
    """Send one table's ``CommitTableRequest`` and record what it did."""
    created = any(isinstance(r, AssertCreate) for r in requirements)
    action = "create_table" if created else "commit"
    detail = {"updates": _actions(updates), **({"staged": True} if created else {}),
              **dict(detail)}
    try:
        answer = _upstream(call).commit_table_request(ident, request)
    except Exception as e:
        _unknown(call, action, ident, e, detail)
        raise
    call.changes.append(_change(call, action, ident, answer, detail))
    return answer


def _update_table(call: Call) -> Response:
    doc = call.json()
    ident, requirements, updates = _parse_commit(doc, "the commit request")
    if ident is not None and ident != call.ident:
        raise BadRequest(f"the commit request names table {ident}, the path {call.ident}")
    answer = _commit(call, call.ident, doc, requirements, updates, {})
    return _answer(call, answer, load=False)


def _commit_transaction(call: Call) -> Response:
    doc = call.json()
    parsed = transaction_changes(doc)
    catalog = _upstream(call)
    if not catalog.supports(TRANSACTIONS_ENDPOINT):
        if len(parsed) > 1:
            raise UnsupportedOperation(
                f"catalog {call.catalog_name!r} passes commits on to a REST catalog that does "
                f"not commit several tables at once ({len(parsed)} asked): commit each table "
                "on its own")
        only, requirements, updates = parsed[0]
        _commit(call, only, doc["table-changes"][0], requirements, updates,
                {"transaction": 1})
        return Response(204)
    detail = {"transaction": len(parsed), "proxied": True}
    try:
        catalog.commit_transaction_request(doc)
    except Exception as e:
        for ident, _, changed in parsed:
            _unknown(call, "commit", ident, e, {"updates": _actions(changed), **detail})
        raise
    for ident, wanted, changed in parsed:  # what it made, asked once it is done
        action = "create_table" if any(isinstance(r, AssertCreate) for r in wanted) \
            else "commit"
        what = {"updates": _actions(changed), **detail}
        try:
            answer = catalog.load_table_answer(ident)
        except Exception:  # committed: only the metadata files are missing from the audit
            call.changes.append(Change(action, call.catalog_name, ident.namespace, ident.name,
                                       detail=what))
            continue
        call.changes.append(_change(call, action, ident, answer, what))
    return Response(204)


#: The routes whose handlers are replaced for a catalog that is a REST catalog.
HANDLERS: dict[str, Callable[[Call], Response]] = {
    "loadTable": _load_table,
    "createTable": _create_table,
    "updateTable": _update_table,
    "commitTransaction": _commit_transaction,
}


def proxied(call: Call) -> bool:
    """Whether ``call`` goes to a catalog that is a REST catalog."""
    return call.operation.catalog is not None and isinstance(call.catalog, RestCatalog)

