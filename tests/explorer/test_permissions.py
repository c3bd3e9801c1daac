"""explorer.access.permissions, the one place permission decisions are made: roles per catalog, the
``*`` grant, the default role, superusers, anonymous visitors; and the pages that use it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from explorer.access import permissions as p
from explorer.errors import Forbidden
from explorer.models import CatalogGrant, TaskRun
from tests.explorer.tasks_support import make_table, user_with

pytestmark = pytest.mark.django_db

R = p.Role


@pytest.mark.parametrize(("grants", "default", "local", "other"), [
    ([], "viewer", R.VIEWER, R.VIEWER),
    ([], "none", R.NONE, R.NONE),
    ([("local", "maintainer")], "none", R.MAINTAINER, R.NONE),
    ([("local", "maintainer")], "viewer", R.MAINTAINER, R.VIEWER),
    ([("*", "viewer"), ("local", "admin")], "none", R.ADMIN, R.VIEWER),
    ([("*", "maintainer"), ("local", "viewer")], "none", R.MAINTAINER, R.MAINTAINER),
])
def test_role_of(settings: Any, grants: list[tuple[str, str]], default: str, local: R,
                 other: R) -> None:
    settings.FLOE_DEFAULT_ROLE = default
    user = user_with("u")
    for catalog, role in grants:
        CatalogGrant.objects.create(user=user, catalog=catalog, role=role)
    assert (p.role_of(user=user, catalog="local"), p.role_of(user=user, catalog="other")) == (
        local, other)


def test_superusers_anonymous_and_inactive_users(settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "viewer"
    assert p.role_of(user=user_with("root", superuser=True), catalog="any") == R.ADMIN
    settings.FLOE_ALLOW_ANONYMOUS = True
    assert p.role_of(user=AnonymousUser(), catalog="local") == R.VIEWER
    assert not p.can_change(user=AnonymousUser(), catalog="local")
    settings.FLOE_ALLOW_ANONYMOUS = False
    assert p.role_of(user=AnonymousUser(), catalog="local") == R.NONE
    gone = user_with("gone", "admin")
    gone.is_active = False
    assert p.role_of(user=gone, catalog="local") == R.NONE


def test_decisions_and_refusals(settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "none"
    mia = user_with("mia", "maintainer")
    owner = user_with("owner", "maintainer")
    run = TaskRun.objects.create(kind="export", catalog="local", created_by=owner)
    assert p.can_submit(user=mia, kind="compact", catalog="local")
    assert not p.can_submit(user=mia, kind="compact", catalog="other")
    assert p.can_cancel(user=mia, run=run) and not p.can_download(user=mia, run=run)
    assert p.can_download(user=owner, run=run)
    assert not p.can_administer(user=mia, catalog="local")
    assert p.readable_catalogs(user=mia, names=["local", "other"]) == ["local"]
    assert p.visible_catalogs(user=mia) == {"local"}
    assert p.visible_catalogs(user=user_with("root", superuser=True)) is None
    with pytest.raises(Forbidden, match="maintainer role on it"):
        p.require_change(user=user_with("vic", "viewer"), catalog="local")
    with pytest.raises(Forbidden, match="admin role"):
        p.require_administer(user=mia, catalog="*")


@pytest.fixture
def two_catalogs(tmp_path: Path, settings: Any) -> Path:
    make_table(tmp_path / "local", "ns")
    make_table(tmp_path / "other", "ns")
    (tmp_path / "catalogs.toml").write_text(
        f'[catalogs.other]\ntype = "filesystem"\nwarehouse = "{tmp_path / "other"}"\n')
    settings.FLOE_WAREHOUSE = str(tmp_path / "local")
    settings.FLOE_CATALOGS = str(tmp_path / "catalogs.toml")
    return tmp_path


def test_pages_show_only_readable_catalogs(two_catalogs: Path, settings: Any) -> None:
    settings.FLOE_DEFAULT_ROLE = "none"
    settings.FLOE_ALLOW_ANONYMOUS = False
    assert Client().get("/catalogs/local/namespaces/ns/tables/events/").status_code == 302
    client = Client()
    client.force_login(user_with("vic", "viewer", catalog="other"))
    page = client.get("/").content.decode()
    assert 'data-catalog="other"' in page and 'data-catalog="local"' not in page
    assert client.get("/catalogs/other/namespaces/ns/tables/events/").status_code == 200
    refused = client.get("/catalogs/local/namespaces/ns/tables/events/")
    assert refused.status_code == 403 and "viewer role" in refused.content.decode()


def test_expensive_pages_are_rate_limited(two_catalogs: Path, settings: Any) -> None:
    settings.FLOE_EXPENSIVE_READS_PER_MINUTE = 1
    client = Client()
    plan = "/catalogs/local/namespaces/ns/tables/events/plan/"
    assert client.get(plan).status_code == 200
    limited = client.get(plan)
    assert limited.status_code == 429 and "try again in" in limited.content.decode()
    assert int(limited["Retry-After"]) >= 1
    assert client.get("/catalogs/local/namespaces/ns/tables/events/").status_code == 200
