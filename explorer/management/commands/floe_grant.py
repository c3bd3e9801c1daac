"""``python manage.py floe_grant USER CATALOG ROLE``: give a user a role on a catalog (``*``:
every catalog), e.g. the first admin; ``--revoke`` takes the user's grant on the catalog away.
Recorded in the audit trail as done by the command."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from explorer.access import services
from explorer.models import CatalogGrant
from floe.errors import FloeError


class Command(BaseCommand):
    help = "Give USER the ROLE (viewer, maintainer, admin) on CATALOG ('*': every catalog)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user", help="user name")
        parser.add_argument("catalog", help="catalog name, or * for every catalog")
        parser.add_argument("role", nargs="?", choices=CatalogGrant.Role.values,
                            help="viewer, maintainer or admin")
        parser.add_argument("--revoke", action="store_true",
                            help="take the user's grant on the catalog away instead")

    def handle(self, *args: Any, **options: Any) -> None:
        user, catalog, role = options["user"], options["catalog"], options["role"]
        try:
            if options["revoke"]:
                removed = services.grant_revoke_bootstrap(username=user, catalog=catalog)
                self.stdout.write(f"revoked {removed} of {user} on {catalog}" if removed
                                  else f"{user} had no grant on {catalog}")
                return
            if role is None:
                raise CommandError("give a ROLE: viewer, maintainer or admin")
            grant = services.grant_bootstrap(username=user, catalog=catalog, role=role)
        except FloeError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{grant.user.get_username()} is {grant.role} on {grant.catalog}")
