"""The catalogs the explorer knows, from settings.

For now one file-system catalog named ``local`` over ``FLOE_WAREHOUSE`` (tables at
``<warehouse>/<namespace>/<table>/metadata/``, as Spark's Hadoop catalog writes them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from django.conf import settings

LOCAL_CATALOG = "local"
FILESYSTEM = "filesystem"


@dataclass(frozen=True, slots=True)
class Catalog:
    name: str
    type: str
    warehouse: str

    @property
    def exists(self) -> bool:
        return os.path.isdir(self.warehouse)


def configured_catalogs() -> list[Catalog]:
    return [Catalog(name=LOCAL_CATALOG, type=FILESYSTEM, warehouse=settings.FLOE_WAREHOUSE)]
